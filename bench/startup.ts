/**
 * Start-up cost of the CLI, against the floor of starting Node at all (`node -e 0`), in the same run, in alternating
 * order, as medians (docs/performance.md, "Start-up"):
 *
 *   npm run build && node --import tsx bench/startup.ts [--runs 21] [--before DIR [--before-node PATH]]
 *
 * The CLI keeps V8's compile cache under os.tmpdir(): "empty" runs give each run a fresh TMPDIR, as systemd's
 * PrivateTmp=yes does. Commands: `--help`; `status` on a migrated SQLite file; `sync` with nothing to do (an in-process sandbox, the
 * watermark brought current by a first sync). `--before DIR` also times DIR/bin/occupancy-sync.js, an older checkout
 * with its node_modules (the tsx launcher), warm (tsx's transform cache kept) and cold (a fresh TMPDIR per run, as
 * under systemd's PrivateTmp=yes), with `--before-node` (default: this Node; the old release's native module may
 * need the Node it was installed with). Each Node gets its own `node -e 0` floor; ratios are to the floor of the
 * Node that ran the command.
 */
import { join } from 'node:path';
import { startSandbox } from '../src/sandbox/index.ts';
import { ROOT, spawnProcess } from '../test/support/process.ts';
import { tempDir } from '../test/support/tmp.ts';

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ''), process.argv[i + 1] ?? '');
const runs = Number(args.get('runs') ?? 21);
const before = args.get('before');
const beforeNode = args.get('before-node') ?? process.execPath;

interface Variant {
  name: string;
  node: string;
  bin: string;
  /** A fresh TMPDIR for every run: tsx's cache starts empty. */
  coldTmp?: boolean;
}

const dist = join(ROOT, 'dist/bin/occupancy-sync.js');
const variants: Variant[] = [
  { name: 'after (dist, warm compile cache)', node: process.execPath, bin: dist },
  { name: 'after (dist, empty compile cache)', node: process.execPath, bin: dist, coldTmp: true },
];
if (before) {
  variants.push({ name: 'before (tsx, warm cache)', node: beforeNode, bin: join(before, 'bin/occupancy-sync.js') });
  variants.push({ name: 'before (tsx, empty cache)', node: beforeNode, bin: join(before, 'bin/occupancy-sync.js'), coldTmp: true });
}
const nodes = [...new Set(variants.map((v) => v.node))];
const version = (node: string) => (node === process.execPath ? process.version : node);
const floorLabel = (node: string) => `\`node -e 0\` (${version(node)})`;

async function time(node: string, argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const started = performance.now();
  const child = spawnProcess(node, argv, { env, stdout: 'ignore', name: argv.join(' ') });
  const { code } = await child.exit(120_000);
  const ms = performance.now() - started;
  if (code !== 0) throw new Error(`${argv.join(' ')} exited ${code}: ${child.stderr().slice(0, 500)}`);
  return ms;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

const work = tempDir('startup-');
const sandbox = await startSandbox({ port: 0 });
try {
  const customer = sandbox.customers[0]!;
  const database = `file:${join(work.dir, 'bench.db')}`;
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TMPDIR: process.env.TMPDIR,
    API_BASE_URL: sandbox.url,
    API_KEY: customer.readKey.key,
    API_SECRET: customer.readKey.secret,
    CUSTOMER_ID: customer.id,
    DATABASE_URL: database,
    LOG_LEVEL: 'warn',
    SYNC_INITIAL_HISTORY: '1h',
  };
  // The first sync loads the last hour; after it, each `sync` finds the watermark current.
  await time(process.execPath, [variants[0]!.bin, 'sync'], env);

  const commands: Array<{ name: string; argv: (bin: string) => string[] }> = [
    { name: '`--help`', argv: (bin) => [bin, '--help'] },
    { name: '`status` (SQLite)', argv: (bin) => [bin, 'status'] },
    { name: '`sync`, nothing to do', argv: (bin) => [bin, 'sync'] },
  ];
  const cases = [
    ...nodes.map((node) => ({ label: floorLabel(node), node, argv: ['-e', '0'], cold: false })),
    ...variants.flatMap((v) => commands.map((c) => ({ label: `${c.name} ${v.name}`, node: v.node, argv: c.argv(v.bin), cold: !!v.coldTmp }))),
  ];
  const samples = new Map<string, number[]>(cases.map((c) => [c.label, []]));
  // Warm-up round (file cache, tsx's cache for the warm variant), not counted.
  for (const c of cases) await time(c.node, c.argv, env);
  for (let round = 0; round < runs; round++) {
    // Rotate the order every round so no case always runs first or right after the same neighbour.
    const order = cases.map((_, i) => cases[(i + round) % cases.length]!);
    for (const c of order) {
      const tmp = c.cold ? tempDir('startup-tmp-') : undefined;
      samples.get(c.label)!.push(await time(c.node, c.argv, tmp ? { ...env, TMPDIR: tmp.dir } : env));
      tmp?.remove();
    }
  }
  console.log(`${runs} runs each, medians (ms) and ratio to \`node -e 0\` on the same Node:\n`);
  console.log('| Command | Node | Median (ms) | Ratio to `node -e 0` |');
  console.log('|---|---|---:|---:|');
  for (const c of cases) {
    const m = median(samples.get(c.label)!);
    const floor = median(samples.get(floorLabel(c.node))!);
    console.log(`| ${c.label} | ${version(c.node)} | ${m.toFixed(0)} | ${(m / floor).toFixed(2)} |`);
  }
} finally {
  await sandbox.close();
  work.remove();
}
