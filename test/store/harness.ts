import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';
import type { Config, Dialect } from '../../src/config.ts';
import { openStore, type Store } from '../../src/store/index.ts';
import { loadMigrations } from '../../src/store/migrations.ts';
import { FakeClock } from '../../src/clock.ts';
import { freshPgSchema } from '../helpers/pg.ts';
import { tempDir } from '../helpers/tmp.ts';
import { tsNodeArgs } from '../helpers/spawn.ts';

/** The one storage suite runs for each dialect: every test gets its own SQLite file or Postgres schema. */
export const DIALECTS: Dialect[] = ['sqlite', 'postgres'];

export interface Fresh {
  database: Config['database'];
  clock: FakeClock;
  /** A migrated store; closed after the test. */
  store: Store;
  /** Opens another store on the same database (closed after the test). */
  another(): Promise<Store>;
}

const cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

export async function freshDatabase(dialect: Dialect, label: string): Promise<Config['database']> {
  if (dialect === 'sqlite') {
    const dir = tempDir('store-test-');
    cleanups.push(() => dir.remove());
    const path = join(dir.dir, 'nested', 'store.db');
    return { url: `file:${path}`, dialect, sqlitePath: path };
  }
  const schema = await freshPgSchema(label);
  cleanups.push(() => schema.drop());
  return { url: schema.url, dialect, sqlitePath: undefined };
}

export async function fresh(dialect: Dialect, label = 'store', migrate = true): Promise<Fresh> {
  const database = await freshDatabase(dialect, label);
  const clock = new FakeClock('2026-03-01T12:00:00.000Z');
  const open = async () => {
    const store = await openStore(database, { clock });
    cleanups.push(() => store.close());
    return store;
  };
  const store = await open();
  if (migrate) await store.migrate();
  return { database, clock, store, another: open };
}

const CHILD = fileURLToPath(new URL('./fixtures/store-child.ts', import.meta.url));

/** A separate node process running fixtures/store-child.ts against the same database. */
export function spawnChild(url: string, ...args: string[]): { child: ChildProcess; lines: AsyncIterator<string> } {
  const child = spawn(process.execPath, tsNodeArgs(CHILD, url, ...args), { stdio: ['ignore', 'pipe', 'inherit'] });
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  });
  child.stdout!.setEncoding('utf8');
  async function* readLines() {
    let buffer = '';
    for await (const chunk of child.stdout!) {
      buffer += chunk;
      let nl: number;
      while ((nl = buffer.indexOf('\n')) !== -1) {
        yield buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
      }
    }
  }
  return { child, lines: readLines() };
}

export async function nextLine(lines: AsyncIterator<string>): Promise<string> {
  const { value, done } = await lines.next();
  if (done) throw new Error('child exited before printing the expected line');
  return value;
}

/** Names of every committed migration of a dialect, in order (the list grows as migrations are added). */
export const migrationNames = (dialect: Dialect): string[] => loadMigrations(dialect).map((m) => m.name);

/** A page of occupancy readings for one floor space, one minute apart. */
export function readings(count: number, start = '2026-03-01T10:00:00.000Z', floorSpaceId = 'fs-1') {
  const t0 = Date.parse(start);
  return Array.from({ length: count }, (_, i) => ({
    floorSpaceId,
    observedAt: new Date(t0 + i * 60_000).toISOString(),
    occupancyStatus: i % 2 === 0 ? 'OCCUPIED' : 'UNOCCUPIED',
    headcount: i % 5,
    eventId: `obs-${floorSpaceId}-${i}`,
  }));
}

export function checkpoint(customerId: string, watermark: string | null, pageCursor: string | null = null) {
  return { customerId, stream: 'occupancy', watermark, windowStart: null, windowEnd: null, pageCursor, rangeStart: null, rangeEnd: null };
}
