import { readFileSync } from 'node:fs';

/**
 * Where a short process's time goes (the steady state's cron `sync`, bench/steady-profile.ts): a V8 `.cpuprofile`
 * of the main thread split into exclusive categories that sum to the profiled time, and our own functions by
 * inclusive time. Start-up work does not show as one function in a profile (a module's evaluation, Node's
 * resolution and compilation, a lazy `require`), so each sample is classified by its whole stack.
 */

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}

export interface Category {
  name: string;
  ms: number;
}

export interface StartupProfile {
  totalMs: number;
  categories: Category[];
  /** Module loading by the package (or our own dist/ area) whose code was running or being loaded. */
  loading: Category[];
  /** Our compiled functions (dist/), inclusive. */
  own: Category[];
}

const isModuleLoading = (url: string) => url.startsWith('node:internal/modules/') || url === 'node:internal/bootstrap/realm';

/** `node_modules/<pkg>/...` -> pkg; `.../dist/src/<area>/...` -> `ours: <area>`; else undefined. */
function owner(url: string): string | undefined {
  const pkg = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) return pkg[1];
  const own = /\/dist\/(src\/[^/]+|[^/]+)/.exec(url);
  if (own) return `ours: ${own[1]!.replace(/\.js$/, '')}`;
  return undefined;
}

const add = (map: Map<string, number>, key: string, us: number) => map.set(key, (map.get(key) ?? 0) + us);
const sorted = (map: Map<string, number>): Category[] => [...map].map(([name, us]) => ({ name, ms: us / 1000 })).sort((a, b) => b.ms - a.ms);

/**
 * The categories, first match wins from the top:
 * - TypeScript stripping: Node's own stripper (amaro, WebAssembly) loading or running;
 * - module loading: a frame of Node's module loader, or a module's top-level evaluation, on the stack;
 * - GC, idle (waiting for the network, the database, a thread), program (V8 and native work outside JavaScript);
 * - the named phases of a run, by our function on the stack (the innermost known one: the token inside the run);
 * - the rest of the run: after an `await` a stack holds only the continuation (undici, streams, the drivers, our
 *   sync and store code), so any such frame counts as the sync run;
 * - other (Node's own start and exit).
 */
const RUN = 'the sync run (fetch, check, write)';
const PHASES: Array<[RegExp, string]> = [
  [/^(migrate|loadMigrations|requireCurrentSchema)$/, 'migrations check'],
  [/^(openStore|openSqlite|openPostgres|sqliteAdapter|postgresAdapter)$/, 'opening the store'],
  [/^(resolveConfig|config|loadEnvironment)$/, 'configuration'],
  [/^(#refresh|token|authenticate)$/, 'token'],
  // Its first toLocaleString loads ICU's number formatting (a native call: the samples land in the caller).
  [/^(printReport|summaryLine|summaryJson)$/, 'summary line'],
  [/^(runSync|runOnce)$/, RUN],
  [/^close$/, 'closing'],
];

export function profileStartup(file: string): StartupProfile {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as { nodes: Node[]; startTime: number; endTime: number; samples: number[]; timeDeltas: number[] };
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const categories = new Map<string, number>();
  const loading = new Map<string, number>();
  const own = new Map<string, number>();

  profile.samples.forEach((id, i) => {
    const us = profile.timeDeltas[i] ?? 0;
    const stack: Node[] = [];
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) stack.push(byId.get(cur)!);
    // Our functions, inclusive (each once per sample).
    const seen = new Set<string>();
    for (const n of stack) {
      const { url, functionName, lineNumber } = n.callFrame;
      if (!url.startsWith('file://') || !url.includes('/dist/') || (!functionName && lineNumber === 0)) continue;
      const key = `${functionName || '(anonymous)'}  ${url.replace(/.*\/dist\//, '')}:${lineNumber + 1}`;
      if (seen.has(key)) continue;
      seen.add(key);
      add(own, key, us);
    }
    const leaf = stack[0]!.callFrame;
    const urls = stack.map((n) => n.callFrame.url);
    if (urls.some((u) => u.startsWith('node:internal/deps/amaro') || u.startsWith('wasm://'))) return add(categories, 'TypeScript stripping (the bench\'s .ts preload)', us);
    const topLevel = stack.find((n) => n.callFrame.url.startsWith('file://') && !n.callFrame.functionName && n.callFrame.lineNumber === 0 && n.callFrame.columnNumber === 0);
    if (urls.some(isModuleLoading) || topLevel) {
      add(categories, 'module loading (resolve, read, compile, evaluate)', us);
      // Whose module: the innermost frame with an owner, else the module being evaluated, else Node's loader alone.
      const who = stack.map((n) => owner(n.callFrame.url)).find((o) => o !== undefined);
      return add(loading, who ?? 'Node (resolving and compiling)', us);
    }
    if (leaf.functionName === '(garbage collector)') return add(categories, 'GC', us);
    if (leaf.functionName === '(idle)') return add(categories, 'idle (waiting: network, database, threads)', us);
    if (leaf.functionName === '(program)') return add(categories, 'program (V8, native)', us);
    for (const n of stack) {
      const phase = n.callFrame.url.includes('/dist/') ? PHASES.find(([re]) => re.test(n.callFrame.functionName)) : undefined;
      if (phase) return add(categories, phase[1], us);
    }
    if (urls.some((u) => /\/node_modules\/(undici|better-sqlite3|postgres)\/|\/dist\/src\/|^node:(internal\/)?(stream|zlib|net|worker)/.test(u))) return add(categories, RUN, us);
    add(categories, 'other (Node start and exit)', us);
  });
  return { totalMs: (profile.endTime - profile.startTime) / 1000, categories: sorted(categories), loading: sorted(loading), own: sorted(own) };
}

export function formatCategories(list: Category[], totalMs: number, top = list.length): string[] {
  return list.slice(0, top).map((c) => `${((100 * c.ms) / totalMs).toFixed(1).padStart(5)}%  ${c.ms.toFixed(1).padStart(7)} ms  ${c.name}`);
}
