import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import Database from 'better-sqlite3';
import type { Config } from '../../src/config.ts';
import { openStore } from '../../src/store/index.ts';
import {
  EXCHANGES_DIR,
  exchangeFileName,
  META_FILE,
  RECORDING_FORMAT,
  RECORDING_VERSION,
  type RecordedExchange,
  type RecordingMeta,
} from '../../src/sandbox/replay-format.ts';

/** Every file under `dir`, with its text. */
export function filesOf(dir: string): Array<{ path: string; text: string }> {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => {
      const path = join(e.parentPath, e.name);
      return { path: relative(dir, path), text: readFileSync(path, 'utf8') };
    });
}

/** The forms a secret can take in a text: as is, JSON-escaped, URL-encoded, base64 (both alphabets, padded or not), hex. */
export function formsOf(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const url = encodeURIComponent(secret);
  return [
    ...new Set([
      secret,
      JSON.stringify(secret).slice(1, -1),
      url,
      url.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()),
      bytes.toString('base64'),
      bytes.toString('base64').replace(/=+$/, ''),
      bytes.toString('base64url'),
      bytes.toString('hex'),
      bytes.toString('hex').toUpperCase(),
    ]),
  ];
}

/** Each (file, secret name, form) where a form of a secret occurs: the list must be empty. */
export function leaks(dir: string, secrets: Record<string, string>): string[] {
  const found: string[] = [];
  const files = filesOf(dir);
  for (const [name, secret] of Object.entries(secrets)) {
    for (const form of formsOf(secret)) {
      for (const file of files) if (file.text.includes(form)) found.push(`${file.path}: ${name} as ${JSON.stringify(form.slice(0, 24))}…`);
    }
  }
  return found;
}

/** The rows a sync leaves, table by table, each query in an order that does not depend on the dialect. */
type Rows = Array<Record<string, unknown>>;
const DUMPED = {
  buildings: 'SELECT * FROM buildings ORDER BY customer_id, id',
  occupancy: 'SELECT * FROM occupancy ORDER BY customer_id, floor_space_id, observed_at',
  sync_state: 'SELECT * FROM sync_state ORDER BY customer_id, stream',
  sync_runs: 'SELECT * FROM sync_runs ORDER BY customer_id, stream, started_at',
  quarantined_records: 'SELECT * FROM quarantined_records ORDER BY 1, 2, 3',
  webhook_deliveries: 'SELECT * FROM webhook_deliveries ORDER BY 1, 2',
} as const;
export type Dump = Record<keyof typeof DUMPED, Rows>;

// Run ids follow start order (and a Postgres sequence is never reset): left out.
const withoutRunIds = (dump: Dump): Dump => ({ ...dump, sync_runs: dump.sync_runs.map(({ id: _id, ...run }) => run) });

/** The rows a sync leaves in a SQLite database (run ids left out). */
export function dump(path: string): Dump {
  const db = new Database(path, { readonly: true });
  try {
    return withoutRunIds(Object.fromEntries(Object.entries(DUMPED).map(([table, sql]) => [table, db.prepare(sql).all() as Rows])) as Dump);
  } finally {
    db.close();
  }
}

/** The same rows from any database the store opens (a Postgres schema too), through the store's own reading. */
export async function dumpDatabase(database: Config['database']): Promise<Dump> {
  const store = await openStore(database);
  try {
    const tables: Partial<Dump> = {};
    for (const [table, sql] of Object.entries(DUMPED)) tables[table as keyof Dump] = await store.query(sql);
    return withoutRunIds(tables as Dump);
  } finally {
    await store.close();
  }
}

/** The settings `sandbox --replay` printed as an .env block (NAME=value lines). */
export function printedEnv(stdout: string): Record<string, string> {
  return Object.fromEntries([...stdout.matchAll(/^([A-Z][A-Z0-9_]*)=(.*)$/gm)].map((m) => [m[1]!, m[2]!]));
}

/** The NODE_OPTIONS `sandbox --replay` printed for the command under replay. */
export function printedNodeOptions(stdout: string): string {
  const match = /NODE_OPTIONS='([^']+)'/.exec(stdout);
  if (!match) throw new Error(`sandbox --replay printed no NODE_OPTIONS line:\n${stdout}`);
  return match[1]!;
}

/** A recording written by hand, for replay tests that need exact exchanges. */
export function writeRecording(dir: string, exchanges: RecordedExchange[], meta: Partial<RecordingMeta> = {}): void {
  mkdirSync(join(dir, EXCHANGES_DIR), { recursive: true });
  const full: RecordingMeta = {
    format: RECORDING_FORMAT,
    version: RECORDING_VERSION,
    command: ['sync'],
    upstream: 'https://platform.example',
    clock: { frozenAt: '2026-01-08T00:00:00.000Z', epochMs: Date.parse('2026-01-08T00:00:00.000Z') },
    startedAt: '2026-01-08T00:00:00.000Z',
    finishedAt: '2026-01-08T00:00:05.000Z',
    exitCode: 0,
    exchanges: exchanges.length,
    keys: [{ key: 'recorded-key-1', customerId: '11111111-2222-4333-8444-555555555555' }],
    settings: {},
    removed: [],
    ...meta,
  };
  writeFileSync(join(dir, META_FILE), JSON.stringify(full, null, 2));
  for (const x of exchanges) writeFileSync(join(dir, EXCHANGES_DIR, exchangeFileName(x)), JSON.stringify(x, null, 2));
}
