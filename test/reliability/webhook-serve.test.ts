import { randomUUID } from 'node:crypto';
import { readdirSync, readlinkSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { signatureHeader } from '../../src/webhooks/signature.ts';
import { CUSTOMER_A, SECRET_A, delivery, send, type RawResponse } from '../webhooks/helpers.ts';
import { runMain } from '../support/cli.ts';
import { freshDatabase, PG_BASE_URL, requirePostgres } from '../support/databases.ts';
import { spawnCli, spawnProcess, type Child } from '../support/process.ts';
import { tempDir } from '../support/tmp.ts';
import { waitFor, within } from '../support/wait.ts';
import { blackHoleProxy } from './black-hole-proxy.ts';
import { Figures } from './figures.ts';

/**
 * `webhook serve` as an operator runs it: what it says when it cannot start (every message names what is missing and
 * the fix; a receiver alone needs no API key), and a SIGTERM while its database does not answer: a Postgres whose
 * port accepts connections and never answers (at the start, and in the middle of a delivery) and a SQLite file
 * another process holds locked. It must stop (exit 0, as the README's table says for SIGTERM), say what it was waiting
 * for, answer what was in flight with 503 and acknowledge nothing it did not store.
 */

const figures = new Figures({ section: 'webhook-serve', title: '`webhook serve`: start-up messages, and SIGTERM while the database does not answer' }, [
  'webhook-serve/receiver-alone',
  'webhook-serve/start-up-errors',
  'webhook-serve/postgres-black-hole-at-start',
  'webhook-serve/postgres-black-hole-mid-delivery',
  'webhook-serve/sqlite-locked-at-start',
]);
afterAll(() => void figures.publish());

const tmp = tempDir('webhook-serve-');
afterAll(() => tmp.remove());
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const BASE_ENV = { WEBHOOK_HOST: '127.0.0.1', WEBHOOK_PORT: '0', LOG_LEVEL: 'info', PATH: process.env.PATH ?? '' };
const sqliteUrl = () => `file:${join(tmp.dir, `${randomUUID()}.db`)}`;

function signed() {
  const body = JSON.stringify(delivery({ Id: randomUUID(), Created: new Date().toISOString(), Sent: new Date().toISOString() }));
  return { body, headers: { 'Content-Type': 'application/json', 'X-Service-Signature': signatureHeader(SECRET_A, body, Math.floor(Date.now() / 1000)) } };
}

/** `webhook serve` in this process until the returned stop() aborts it; its first delivery is sent and answered. */
async function serveAndDeliver(env: Record<string, string>): Promise<{ answer: RawResponse; code: number; stderr: string }> {
  const controller = new AbortController();
  let announced!: (url: string) => void;
  const url = new Promise<string>((resolve) => (announced = resolve));
  let stderr = '';
  const done = (async () => {
    const { main } = await import('../../src/cli/main.ts');
    return main(['node', 'occupancy-sync', 'webhook', 'serve'], {
      env,
      stdout: { write: () => true },
      stderr: {
        write: (t: string) => {
          stderr += t;
          const match = /Receiving webhook deliveries at (\S+)/.exec(t);
          if (match) announced(match[1]!);
          return true;
        },
      },
      signal: controller.signal,
    });
  })();
  const where = await within(
    Promise.race([url, done.then((code) => Promise.reject(new Error(`webhook serve exited (${code}) before listening: ${stderr}`)))]),
    'webhook serve to listen',
  );
  const { body, headers } = signed();
  const answer = await send(where, { headers, body });
  controller.abort();
  return { answer, code: await done, stderr };
}

describe('start-up: every message names what is missing', () => {
  it('a receiver alone needs CUSTOMER_ID and a webhook secret, no API key (from the environment, or a customers-file entry without apiKey)', async () => {
    const alone = await serveAndDeliver({ ...BASE_ENV, DATABASE_URL: sqliteUrl(), CUSTOMER_ID: CUSTOMER_A, WEBHOOK_SECRET: SECRET_A });
    expect([alone.answer.status, alone.answer.json, alone.code]).toEqual([200, { status: 'stored' }, 0]);

    const file = join(tmp.dir, 'customers.json');
    writeFileSync(file, JSON.stringify([{ id: CUSTOMER_A, webhookSecretEnv: 'ACME_WEBHOOK_SECRET' }]));
    const fromFile = await serveAndDeliver({ ...BASE_ENV, DATABASE_URL: sqliteUrl(), CUSTOMERS_FILE: file, ACME_WEBHOOK_SECRET: SECRET_A });
    expect([fromFile.answer.status, fromFile.answer.json, fromFile.code]).toEqual([200, { status: 'stored' }, 0]);
    figures.record({
      key: 'webhook-serve/receiver-alone',
      tried: '`webhook serve` with CUSTOMER_ID and WEBHOOK_SECRET and no API key; and with a customers-file entry holding only id and webhookSecretEnv',
      count: 2,
      held: 'it starts, stores a signed delivery (200) and exits 0 on SIGTERM',
    });
  });

  it('each way of starting it wrong exits 78 with one line naming the variable and the fix', async () => {
    const db = { DATABASE_URL: sqliteUrl() };
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', () => resolve()));
    cleanups.push(() => new Promise((resolve) => busy.close(resolve)));
    const notPem = join(tmp.dir, 'not.pem');
    writeFileSync(notPem, 'not a certificate\n');
    const customersFile = join(tmp.dir, 'one.json');
    writeFileSync(customersFile, JSON.stringify([{ id: CUSTOMER_A, webhookSecretEnv: 'ACME_WEBHOOK_SECRET' }]));
    const cases: Array<[string, string[], Record<string, string>, string]> = [
      ['nothing configured', ['webhook', 'serve'], {}, 'occupancy-sync: CUSTOMER_ID=(unset): the receiver files each delivery under a configured customer, and none is configured. Fix: set CUSTOMER_ID and WEBHOOK_SECRET'],
      ['a secret without a customer', ['webhook', 'serve'], { WEBHOOK_SECRET: SECRET_A }, 'occupancy-sync: CUSTOMER_ID=(unset): required with WEBHOOK_SECRET: the receiver files each delivery under the customer its webhook belongs to. Fix: set CUSTOMER_ID'],
      ['headers without a customer', ['webhook', 'serve'], { WEBHOOK_REQUIRED_HEADERS: '{"X-Token":"abc"}' }, 'occupancy-sync: CUSTOMER_ID=(unset): required with WEBHOOK_REQUIRED_HEADERS'],
      ['a customer without a secret', ['webhook', 'serve'], { CUSTOMER_ID: CUSTOMER_A }, `occupancy-sync: WEBHOOK_SECRET=(unset): no customer has a webhook secret or custom header (${CUSTOMER_A}), so the receiver would accept no delivery. Fix: set WEBHOOK_SECRET`],
      ['sync on a receiver-only setup', ['sync'], { API_BASE_URL: 'https://api.example.com', CUSTOMER_ID: CUSTOMER_A, WEBHOOK_SECRET: SECRET_A }, `occupancy-sync: API_KEY=(unset): customer ${CUSTOMER_A} has no API key, and this command calls the API (receiving its webhooks with \`webhook serve\` needs none). Fix: set API_KEY and API_SECRET`],
      ['WEBHOOK_SECRET beside CUSTOMERS_FILE', ['webhook', 'serve'], { CUSTOMERS_FILE: customersFile, ACME_WEBHOOK_SECRET: SECRET_A, WEBHOOK_SECRET: SECRET_A }, 'occupancy-sync: WEBHOOK_SECRET='],
      ['a port in use', ['webhook', 'serve'], { CUSTOMER_ID: CUSTOMER_A, WEBHOOK_SECRET: SECRET_A, WEBHOOK_PORT: String((busy.address() as AddressInfo).port) }, `occupancy-sync: WEBHOOK_HOST="127.0.0.1", WEBHOOK_PORT=${(busy.address() as AddressInfo).port} (or --host, --port): cannot listen, another process already listens there. Fix:`],
      ['a certificate file that is no PEM', ['webhook', 'serve'], { CUSTOMER_ID: CUSTOMER_A, WEBHOOK_SECRET: SECRET_A, WEBHOOK_TLS_CERT: notPem, WEBHOOK_TLS_KEY: notPem }, `occupancy-sync: WEBHOOK_TLS_CERT=${JSON.stringify(notPem)}, WEBHOOK_TLS_KEY=${JSON.stringify(notPem)}: not a usable certificate and private key`],
    ];
    for (const [what, args, env, start] of cases) {
      const result = await runMain(args, { ...BASE_ENV, ...db, ...env });
      expect([what, result.code]).toEqual([what, 78]);
      const lines = result.stderr.trimEnd().split('\n').filter((l) => l.startsWith('occupancy-sync: '));
      expect([what, lines.length, lines[0]!.startsWith(start)]).toEqual([what, 1, true]);
      expect([what, lines[0]]).toEqual([what, expect.stringMatching(/\. Fix: /)]);
      expect([what, result.stderr.includes(SECRET_A)]).toEqual([what, false]);
    }
    figures.record({
      key: 'webhook-serve/start-up-errors',
      tried:
        '`webhook serve` with nothing configured, a secret or headers without CUSTOMER_ID, a customer without a secret, WEBHOOK_SECRET beside CUSTOMERS_FILE, ' +
        'a port in use, a certificate file that is no PEM; `sync` on a receiver-only setup',
      count: cases.length,
      held: 'exit 78 with one line naming the variable, what is missing and the fix; no secret printed',
    });
  });
});

/** A TCP listener that accepts connections and never answers; `swallowed` counts the bytes it was sent. */
async function blackHole(): Promise<{ port: number; swallowed(): number; close(): Promise<void> }> {
  let bytes = 0;
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('data', (d: Buffer) => (bytes += d.length));
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    port: (server.address() as AddressInfo).port,
    swallowed: () => bytes,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * docs/reliability.md ("Exits"): `webhook serve` on SIGTERM gives deliveries in flight 5 s, their 503s 1 s, the
 * database's close 2 s (3 s at most), and exits. SLACK_MS: timers run late on a loaded 2-core machine.
 */
const SIGTERM_SILENT_DATABASE_MS = 10_000;
const SLACK_MS = 15_000;

/** The files a process has open (Linux). */
function openFiles(pid: number): string[] {
  try {
    return readdirSync(`/proc/${pid}/fd`).map((fd) => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        return '';
      }
    });
  } catch {
    return [];
  }
}

function serveChild(env: Record<string, string>): Child {
  const child = spawnCli(['webhook', 'serve'], { env: { ...BASE_ENV, CUSTOMER_ID: CUSTOMER_A, WEBHOOK_SECRET: SECRET_A, ...env } });
  cleanups.push(() => child.kill('SIGKILL'));
  return child;
}

describe('SIGTERM while the database does not answer', () => {
  it('Postgres black-holed from the start: says it is waiting, stops on SIGTERM at once, exit 0', async () => {
    const hole = await blackHole();
    cleanups.push(hole.close);
    // connect_timeout=0: the driver itself would wait for ever, so only the receiver's own wait can end this.
    const url = `postgres://postgres@127.0.0.1:${hole.port}/test?connect_timeout=0`;
    const child = serveChild({ DATABASE_URL: url });
    await child.waitForLine(/waiting for the database at postgres:\/\/postgres@127\.0\.0\.1:\d+\/test\?connect_timeout=0 to answer/, 'the receiver to say what it waits for', { stream: 'stderr' });
    const exit = await child.kill('SIGTERM', 30_000);
    expect(exit).toEqual({ code: 0, signal: null });
    expect(child.stderr()).toMatch(/stopped before receiving any delivery, while waiting for an answer from the database at postgres:\/\/postgres@127\.0\.0\.1:\d+\/test/);
    figures.record({
      key: 'webhook-serve/postgres-black-hole-at-start',
      tried: '`webhook serve` on a Postgres URL whose port accepts connections and never answers (driver connect timeout off), then SIGTERM',
      count: 1,
      held: 'a warning names the database it waits for; on SIGTERM it exits 0 with a line saying what it was waiting for',
    });
  });

  it('Postgres black-holed during a delivery: the delivery is answered 503, the log says what was waited for, exit 0, nothing acknowledged unstored', async () => {
    await requirePostgres();
    const db = await freshDatabase('postgres', 'webhook_stop');
    cleanups.push(db.drop);
    const schema = db.schema!;
    const admin = postgres(PG_BASE_URL, { max: 1, onnotice: () => {} });
    cleanups.push(() => admin.end());
    const target = new URL(PG_BASE_URL);
    const proxy = await blackHoleProxy({ host: target.hostname, port: Number(target.port || 5432) });
    cleanups.push(proxy.close);
    const child = serveChild({ DATABASE_URL: `postgres://postgres@127.0.0.1:${proxy.port}/test?schema=${schema}` });
    const [, url] = await child.waitForLine(/Receiving webhook deliveries at (\S+)/, 'the receiver to listen', { stream: 'stderr', timeoutMs: 60_000 });
    const first = signed();
    expect((await send(url!, first)).json).toEqual({ status: 'stored' });

    proxy.blackHole();
    const second = signed();
    const answer = send(url!, second);
    await waitFor(() => proxy.swallowed() > 0, 'the delivery to reach the (now silent) database');
    const stoppedAt = performance.now();
    const exit = await child.kill('SIGTERM', SIGTERM_SILENT_DATABASE_MS + SLACK_MS);
    const tookMs = performance.now() - stoppedAt;
    expect(exit).toEqual({ code: 0, signal: null });
    // Formerly alive 40 s and more, until the database answered again.
    expect(tookMs, child.stderr().slice(-2000)).toBeLessThan(SIGTERM_SILENT_DATABASE_MS + SLACK_MS);
    const res = await answer;
    expect([res.status, res.json, res.headers['retry-after']]).toEqual([503, { error: 'stopping' }, '5']);
    expect(child.stderr()).toMatch(/1 delivery still waiting for the database after \d+ ms; answered 503 so the platform sends them again/);
    const stored = await admin.unsafe<{ id: string }[]>(`SELECT id FROM "${schema}".webhook_deliveries ORDER BY id`);
    expect(stored.map((r) => r.id)).toEqual([JSON.parse(first.body).Id]);
    figures.record({
      key: 'webhook-serve/postgres-black-hole-mid-delivery',
      tried: 'Postgres behind a proxy that turns into a black hole (both ways, connections kept open) while a delivery is being stored, then SIGTERM',
      count: 1,
      held: 'the delivery answered 503 stopping (Retry-After: 5); a warning counts what was waiting for the database; exit 0 within the documented 10 s of SIGTERM (was 40 s and more); only acknowledged deliveries stored',
    });
  });

  it('SQLite locked by another process while migrating at the start: exit 0 on SIGTERM, saying what it was doing', async () => {
    const path = join(tmp.dir, `${randomUUID()}.db`);
    const script = `
      const db = new (require('better-sqlite3'))(${JSON.stringify(path)});
      db.pragma('journal_mode = WAL');
      db.exec('BEGIN EXCLUSIVE');
      console.log('locked');
      setInterval(() => {}, 60000);`;
    const holder = spawnProcess(process.execPath, ['-e', script], { name: 'the SQLite lock holder' });
    cleanups.push(() => holder.kill('SIGKILL'));
    await holder.waitForLine('locked', 'the lock holder to take BEGIN EXCLUSIVE');
    const child = serveChild({ DATABASE_URL: `file:${path}` });
    // Nothing is printed while better-sqlite3 waits for the lock: the sign that the command runs (its signal handlers
    // are in place) is the database file among the process's open files.
    await waitFor(() => openFiles(child.process.pid!).includes(path), 'webhook serve to open the SQLite file', 60_000);
    const exit = await child.kill('SIGTERM', 60_000);
    expect([exit, child.stderr()]).toEqual([{ code: 0, signal: null }, expect.stringMatching(/stopped before receiving any delivery, while opening and migrating the database at file:/)]);
    figures.record({
      key: 'webhook-serve/sqlite-locked-at-start',
      tried: '`webhook serve` on a new SQLite file another process holds with BEGIN EXCLUSIVE (migrations pending), then SIGTERM',
      count: 1,
      held: 'exit 0 with a line saying it stopped while opening and migrating the database (it was exit 1, database is locked)',
    });
  });
});
