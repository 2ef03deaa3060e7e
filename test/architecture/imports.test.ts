import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../support/process.ts';

/**
 * The import rules of docs/architecture.md, checked on every source file: a layer imports only the layers below it,
 * and never a sibling folder of its own layer. A new folder must be given a layer here (and in the document) first.
 */

/** Layers, lowest first. `src/*.ts` files are the core; each other entry is a folder. */
const LAYERS: ReadonlyArray<ReadonlyArray<string>> = [
  ['src/core', 'db/schema'],
  ['src/api', 'src/store', 'src/sandbox'],
  ['src/sync', 'src/webhooks', 'src/report'],
  ['jobs'],
  ['src/app'],
  ['src/serve'],
  ['src/cli', 'src/public'],
  ['src/index.ts', 'bin'],
];

/** Exceptions the architecture document names. Empty: there are none. */
const ALLOWED: ReadonlyArray<[from: string, to: string]> = [];

/** The unit a file belongs to: its top folder under src/ (or the core for src/*.ts), or its top-level folder. */
function unitOf(file: string): string {
  const rel = relative(ROOT, file).split(sep).join('/');
  if (rel === 'src/index.ts') return rel;
  const parts = rel.split('/');
  if (parts[0] === 'src') return parts.length === 2 ? 'src/core' : `src/${parts[1]}`;
  if (parts[0] === 'db') return `db/${parts[1]}`;
  return parts[0]!;
}

function layerOf(unit: string): number {
  const layer = LAYERS.findIndex((units) => units.includes(unit));
  if (layer < 0) throw new Error(`${unit} has no layer: add it to LAYERS here and to docs/architecture.md`);
  return layer;
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
    .map((e) => join(e.parentPath, e.name));
}

/** Relative specifiers of static imports, re-exports and dynamic imports. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const found: string[] = [];
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"]*?\bfrom\s+'(\.[^']+)'|\bimport\(\s*'(\.[^']+)'\s*\)/g)) {
    found.push((m[1] ?? m[2])!);
  }
  return found;
}

const FILES = [...sources(join(ROOT, 'src')), ...sources(join(ROOT, 'jobs')), ...sources(join(ROOT, 'bin')), ...sources(join(ROOT, 'db/schema'))];

describe('import rules (docs/architecture.md)', () => {
  it('reads the imports of every source file', () => {
    expect(FILES.length).toBeGreaterThan(100);
    expect(importsOf(join(ROOT, 'src/app/run-once.ts'))).toContain('../sync/engine.ts');
    expect(importsOf(join(ROOT, 'src/cli/commands/demo.ts'))).toContain('../../app/demo.ts');
  });

  it('no file imports a layer above its own, or a sibling folder of its own layer', () => {
    const broken: string[] = [];
    for (const file of FILES) {
      const from = unitOf(file);
      for (const spec of importsOf(file)) {
        const to = unitOf(resolve(dirname(file), spec));
        if (to === from || ALLOWED.some(([a, b]) => a === from && b === to)) continue;
        if (layerOf(to) >= layerOf(from)) broken.push(`${relative(ROOT, file)} imports ${spec} (${from} -> ${to})`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('the engine imports no application, wiring or plug-in', () => {
    const engine = FILES.filter((f) => unitOf(f) === 'src/sync');
    expect(engine.length).toBeGreaterThan(5);
    for (const file of engine) {
      for (const spec of importsOf(file)) {
        expect(['src/cli', 'src/serve', 'src/app', 'src/public', 'jobs'], `${relative(ROOT, file)}: ${spec}`).not.toContain(unitOf(resolve(dirname(file), spec)));
      }
    }
  });

  it('a rule that is broken is reported', () => {
    // The check above would see an engine file importing the CLI: the layers say so.
    expect(layerOf('src/cli')).toBeGreaterThan(layerOf('src/sync'));
    expect(layerOf('jobs')).toBeGreaterThan(layerOf('src/sync'));
    expect(() => layerOf('src/nowhere')).toThrow(/has no layer/);
  });
});

/** The store's rooms (docs/architecture.md, "The store"): each dialect's driver and machinery, beside the neutral core. */
const ROOMS = ['src/store/sqlite', 'src/store/postgres'];
/**
 * Files outside the store that may import a room, and why. Empty: the job queue's statements and the API budget's
 * shared rows are opened through the core (src/store/index.ts `openJobQueueSql`, `openBudgetRows`).
 */
const ROOM_USERS: ReadonlyArray<[from: string, to: string]> = [];
/** The core's files that load a room, by a dynamic import only: openStore, openBudgetRows, openJobQueueSql. */
const ROOM_OPENERS = ['src/store/index.ts', 'src/store/api-budget.ts', 'src/store/job-queue.ts'];

const rel = (file: string) => relative(ROOT, file).split(sep).join('/');
const roomOf = (file: string) => ROOMS.find((room) => rel(file).startsWith(`${room}/`));
/** Static imports only (`import ... from`, `export ... from`), not `import()`. */
const staticImportsOf = (file: string) =>
  [...readFileSync(file, 'utf8').matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"]*?\bfrom\s+'(\.[^']+)'/g)].map((m) => m[1]!);

describe('the store: a neutral core beside the sqlite/ and postgres/ rooms (docs/architecture.md)', () => {
  const store = FILES.filter((f) => rel(f).startsWith('src/store/'));

  it('has both rooms and a core', () => {
    for (const room of ROOMS) expect(store.some((f) => roomOf(f) === room), room).toBe(true);
    expect(store.filter((f) => !roomOf(f)).length).toBeGreaterThan(5);
  });

  it('the core imports no room, except the openers loading the dialect they open (a dynamic import)', () => {
    const broken: string[] = [];
    for (const file of store.filter((f) => !roomOf(f))) {
      const dynamicOnly = ROOM_OPENERS.includes(rel(file));
      for (const spec of dynamicOnly ? staticImportsOf(file) : importsOf(file)) {
        if (roomOf(resolve(dirname(file), spec))) broken.push(`${rel(file)} imports ${spec}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('a room imports the core, never the other room', () => {
    const broken: string[] = [];
    for (const file of store.filter((f) => roomOf(f))) {
      for (const spec of importsOf(file)) {
        const to = roomOf(resolve(dirname(file), spec));
        if (to && to !== roomOf(file)) broken.push(`${rel(file)} imports ${spec}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('outside the store, a room is imported only where named (the rest goes through the core)', () => {
    const broken: string[] = [];
    for (const file of FILES.filter((f) => !rel(f).startsWith('src/store/'))) {
      for (const spec of importsOf(file)) {
        const target = rel(resolve(dirname(file), spec));
        if (roomOf(resolve(dirname(file), spec)) && !ROOM_USERS.some(([a, b]) => a === rel(file) && b === target)) broken.push(`${rel(file)} imports ${spec}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('a broken rule is seen', () => {
    expect(roomOf(join(ROOT, 'src/store/sqlite/adapter.ts'))).toBe('src/store/sqlite');
    expect(roomOf(join(ROOT, 'src/store/store.ts'))).toBeUndefined();
    expect(staticImportsOf(join(ROOT, 'src/store/index.ts'))).not.toContain('./sqlite/adapter.ts');
    expect(importsOf(join(ROOT, 'src/store/index.ts'))).toContain('./sqlite/adapter.ts');
  });
});

/** Where SQL and the database drivers may stand (docs/architecture.md, "SQL only in the store"). */
const SQL_HOMES = /^(src\/store\/|db\/)/;
/**
 * SQL text: a statement's keywords in capitals, as every statement of this code base writes them (in prose a message
 * says "select", not "SELECT ... FROM"): DML with its clause, DDL with its object, an upsert's conflict clause.
 */
const SQL_TEXT = /\b(SELECT|DELETE)\b[\s\S]*?\bFROM\b|\bINSERT\s+INTO\b|\bUPDATE\b[\s\S]*?\bSET\b|\b(CREATE|ALTER|DROP)\s+(TABLE|INDEX|VIEW|SCHEMA|TRIGGER|FUNCTION)\b|\bON\s+CONFLICT\b/;
/** The database drivers and the ORM: only the store and db/ speak to a database. */
const DRIVERS = ['postgres', 'pg', 'better-sqlite3', 'node:sqlite', 'drizzle-orm'];

/** The text of every string and template literal of a file (a template's substitutions as `?`), with its line. */
function literalsOf(file: string): Array<{ line: number; text: string }> {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: Array<{ line: number; text: string }> = [];
  const at = (node: ts.Node) => source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) found.push({ line: at(node), text: node.text });
    else if (ts.isTemplateExpression(node)) {
      found.push({ line: at(node), text: [node.head.text, ...node.templateSpans.map((span) => span.literal.text)].join('?') });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Package specifiers a file imports (static, type-only, re-exports, dynamic `import()` and `typeof import()`). */
function packagesOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"]*?\bfrom\s+'([^.'][^']*)'|\bimport\(\s*'([^.'][^']*)'\s*\)/g)].map((m) => (m[1] ?? m[2])!);
}

const isDriver = (spec: string) => DRIVERS.some((d) => spec === d || spec.startsWith(`${d}/`));

describe('SQL only in the store (docs/architecture.md)', () => {
  it('no SQL text outside src/store/ and db/', () => {
    const offenders = FILES.filter((f) => !SQL_HOMES.test(rel(f))).flatMap((file) =>
      literalsOf(file)
        .filter((l) => SQL_TEXT.test(l.text))
        .map((l) => `${rel(file)}:${l.line}: ${l.text.replace(/\s+/g, ' ').slice(0, 80)}`),
    );
    expect(offenders).toEqual([]);
  });

  it('no database driver or drizzle-orm imported outside src/store/ and db/', () => {
    const offenders = FILES.filter((f) => !SQL_HOMES.test(rel(f))).flatMap((file) => packagesOf(file).filter(isDriver).map((spec) => `${rel(file)} imports ${spec}`));
    expect(offenders).toEqual([]);
  });

  it('the rules see what they guard', () => {
    // SQL the store writes is seen, in strings and templates alike; prose and the store's own files are not.
    const store = FILES.filter((f) => rel(f).startsWith('src/store/')).flatMap((f) => literalsOf(f).filter((l) => SQL_TEXT.test(l.text)));
    expect(store.length).toBeGreaterThan(20);
    for (const sql of ['SELECT * FROM sync_health', 'INSERT INTO x (a) VALUES (?)', 'UPDATE budgets SET state = ?', 'DELETE FROM slots WHERE pid = ?', 'CREATE TABLE IF NOT EXISTS t (a int)', 'x ON CONFLICT (a) DO NOTHING']) {
      expect(SQL_TEXT.test(sql), sql).toBe(true);
    }
    for (const prose of ['select a stream from the list', 'Update the definitions file: set paging', 'the SELECT privilege', 'DELETE the file']) expect(SQL_TEXT.test(prose), prose).toBe(false);
    expect(literalsOf(join(ROOT, 'src/store/status-queries.ts')).some((l) => l.text === 'SELECT * FROM sync_health')).toBe(true);
    expect(packagesOf(join(ROOT, 'src/store/postgres/api-budget.ts')).filter(isDriver)).toEqual(['postgres', 'postgres']);
    expect(isDriver('drizzle-orm/pg-core')).toBe(true);
    expect(isDriver('postgres-array')).toBe(false);
    expect(SQL_HOMES.test('src/app/queue.ts')).toBe(false);
  });
});

describe('drizzle-orm (docs/architecture.md, "drizzle-orm")', () => {
  it('its values are imported only through db/schema/drizzle.ts (its CommonJS build; one copy in the process)', () => {
    const offenders = FILES.filter((file) => !file.endsWith(join('db', 'schema', 'drizzle.ts'))).filter((file) =>
      /(?:^|\n)\s*import\s+(?!type\b)[^'"]*?\bfrom\s+'drizzle-orm[^']*'|\bimport\(\s*'drizzle-orm/.test(readFileSync(file, 'utf8')),
    );
    expect(offenders.map((f) => relative(ROOT, f))).toEqual([]);
  });
});

describe('what a sync loads (docs/architecture.md, "Start-up")', () => {
  /** Files importing a package's root for its values (type-only imports load nothing). */
  const rootImporters = (pkg: string) =>
    FILES.filter((file) => new RegExp(`(?:^|\\n)\\s*import\\s+(?!type\\b)[^'"]*?\\bfrom\\s+'${pkg}'|\\bimport\\(\\s*'${pkg}'\\s*\\)`).test(readFileSync(file, 'utf8')))
      .map((f) => relative(ROOT, f).split(sep).join('/'))
      .sort();

  it("graphql's root (type system, validation, execution) only where a schema is worked with, never on a sync's path", () => {
    const schemaWork = /^src\/(sandbox\/|api\/document-schema\.ts$|api\/schema\.ts$|app\/check-fit\.ts$|cli\/commands\/schema\.ts$)/;
    expect(rootImporters('graphql').filter((f) => !schemaWork.test(f))).toEqual([]);
    // The rule sees what it guards.
    expect(rootImporters('graphql')).toContain('src/api/document-schema.ts');
  });

  it("undici's root (every dispatcher, fetch, WebSocket, mocks) only in the record proxy; the API client takes Pool from src/api/undici-pool.ts", () => {
    expect(rootImporters('undici')).toEqual(['src/app/record-proxy.ts']);
  });
});

/**
 * Circles in the static import graph of src/ (type-only imports included: a circle of types still ties the files'
 * meanings to each other). Those allowed to stand, each named by its files exactly: none. A circle's files share a
 * type or a helper that belongs in a file of its own (src/store/sink-def.ts, src/api/budget/settings.ts,
 * src/sync/run/types.ts).
 */
const KNOWN_CIRCLES: ReadonlyArray<readonly string[]> = [];

/** The import graph of `files`: each file and the files of the graph it imports statically. */
function importGraph(files: readonly string[]): Map<string, string[]> {
  const inGraph = new Set(files);
  return new Map(files.map((file) => [file, staticImportsOf(file).map((spec) => resolve(dirname(file), spec)).filter((to) => inGraph.has(to))]));
}

/** The graph's circles: its strongly connected components of more than one file (Tarjan), each as sorted paths. */
function circlesOf(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (file: string) => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const to of graph.get(file) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(file, Math.min(low.get(file)!, low.get(to)!));
      } else if (onStack.has(to)) low.set(file, Math.min(low.get(file)!, index.get(to)!));
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let top: string;
    do {
      top = stack.pop()!;
      onStack.delete(top);
      component.push(top);
    } while (top !== file);
    if (component.length > 1 || graph.get(file)?.includes(file)) circles.push(component.map(rel).sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return circles;
}

/** One path around a circle, `a.ts -> b.ts -> a.ts`, for the message. */
function pathAround(graph: ReadonlyMap<string, readonly string[]>, circle: readonly string[]): string {
  const members = new Set(circle);
  const start = join(ROOT, circle[0]!);
  const seen = new Map<string, string | undefined>([[start, undefined]]);
  const queue = [start];
  while (queue.length) {
    const file = queue.shift()!;
    for (const to of graph.get(file) ?? []) {
      if (to === start) {
        const path = [rel(start)];
        for (let at: string | undefined = file; at !== undefined && at !== start; at = seen.get(at)) path.splice(1, 0, rel(at));
        return [...path, rel(start)].join(' -> ');
      }
      if (!members.has(rel(to)) || seen.has(to)) continue;
      seen.set(to, file);
      queue.push(to);
    }
  }
  return circle.join(', ');
}

describe('import circles (docs/architecture.md)', () => {
  const graph = importGraph(FILES.filter((f) => rel(f).startsWith('src/')));
  const key = (circle: readonly string[]) => circle.join(' ');

  it('src/ has no import circle', () => {
    const circles = circlesOf(graph);
    const known = new Set(KNOWN_CIRCLES.map(key));
    const unknown = circles.filter((c) => !known.has(key(c))).map((c) => `a circle through ${c.join(', ')}: ${pathAround(graph, c)}`);
    expect(unknown).toEqual([]);
    const found = new Set(circles.map(key));
    const gone = KNOWN_CIRCLES.filter((c) => !found.has(key(c))).map((c) => `the known circle ${c.join(', ')} is gone: remove it from KNOWN_CIRCLES`);
    expect(gone).toEqual([]);
  });

  it('the engine has none', () => {
    expect(circlesOf(graph).filter((c) => c.some((f) => f.startsWith('src/sync/')))).toEqual([]);
  });

  it('a circle is seen, named by its files and a path around it', () => {
    const [a, b, c] = ['src/x/a.ts', 'src/x/b.ts', 'src/x/c.ts'].map((f) => join(ROOT, f)) as [string, string, string];
    const made = new Map([[a, [b]], [b, [c]], [c, [a]], [join(ROOT, 'src/x/d.ts'), [a]]]);
    expect(circlesOf(made)).toEqual([['src/x/a.ts', 'src/x/b.ts', 'src/x/c.ts']]);
    expect(pathAround(made, ['src/x/a.ts', 'src/x/b.ts', 'src/x/c.ts'])).toBe('src/x/a.ts -> src/x/b.ts -> src/x/c.ts -> src/x/a.ts');
    expect(circlesOf(new Map([[a, [b]], [b, []]]))).toEqual([]);
  });
});
