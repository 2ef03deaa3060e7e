import { DELIVERIES } from '../support/deliveries.ts';
import { gzipSync } from 'node:zlib';
import postgres from 'postgres';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { memoryLogger } from '../../src/logger.ts';
import type { Store } from '../../src/store/types.ts';
import { INFLATER_BYTES, PendingBudget } from '../../src/webhooks/body.ts';
import { checkFraming } from '../../src/webhooks/framing.ts';
import type { IncomingMessage } from 'node:http';
import { startReceiver, type Receiver } from '../../src/webhooks/receiver.ts';
import { RefusalLog } from '../../src/webhooks/refusal-log.ts';
import { signatureHeader } from '../../src/webhooks/signature.ts';
import { storageRefusal } from '../../src/webhooks/store-failure.ts';
import { CUSTOMER_A, SECRET_A, customer, delivery, flakyStore, send } from './helpers.ts';
import { waitFor } from '../support/wait.ts';
import { DIALECTS, migratedStore, PG_BASE_URL, requirePostgres } from '../support/databases.ts';

const NOW = Date.UTC(2026, 0, 1, 10, 0, 5);
const T = Math.floor(NOW / 1000);

type Target = { store: Store; drop(): Promise<void> };


let receiver: Receiver | undefined;
let target: Target | undefined;
afterEach(async () => {
  await receiver?.close();
  await target?.drop();
  receiver = target = undefined;
});

function signedBytes(raw: Buffer, gzip = false) {
  return {
    headers: {
      'Content-Type': 'application/json; charset=utf-8',
      'X-Service-Signature': signatureHeader(SECRET_A, raw, T),
      ...(gzip ? { 'Content-Encoding': 'gzip' } : {}),
    },
    body: gzip ? gzipSync(raw) : raw,
  };
}

describe.each(DIALECTS)('the signed bytes are the stored bytes (%s)', (dialect) => {
  it('stores exactly what was signed, and both databases refuse the same deliveries with the same 400', async () => {
    target = await migratedStore(dialect, 'hardening');
    receiver = await startReceiver({ deliveries: DELIVERIES,  store: target.store, customers: [customer(CUSTOMER_A, { webhookSecrets: [SECRET_A] })], clock: new FakeClock(NOW) });
    const stored = async (id: string) =>
      (await target!.store.query<{ body: string }>('SELECT body FROM webhook_deliveries WHERE id = $1', [id]))[0]?.body;

    // Odd whitespace, key order, escapes and non-ASCII: kept byte for byte (after decompression).
    const exact = delivery();
    const text = `{ "Type":"Occupancy",\n  "Id": "${exact.Id}" , "CustomerId":"${exact.CustomerId}","Created":"${exact.Created}","Sent":"${exact.Sent}",` +
      `"Note":"caf\\u00e9 \u00e9 \\ud83d\\ude00","Data":[{"FloorSpaceId":"9e8d7c6b-0000-4000-8000-000000000001","OccupancyStatus":"CurrentlyOccupied","Headcount":3}]}`;
    for (const gzip of [false, true]) {
      // Another id for the gzip copy, whatever the random id begins with, so both are stored.
      const id = gzip ? exact.Id.replace(/^./, exact.Id.startsWith('f') ? 'e' : 'f') : exact.Id;
      const raw = Buffer.from(text.replace(exact.Id, id), 'utf8');
      const res = await send(receiver.url, signedBytes(raw, gzip));
      expect(res.status, JSON.stringify(res.json)).toBe(200);
      expect(Buffer.from((await stored(id))!, 'utf8').equals(raw)).toBe(true);
    }

    const refusals: Array<[string, Buffer, string]> = [
      ['a byte order mark', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(delivery()))]), 'byte_order_mark'],
      ['a lone surrogate', Buffer.from(JSON.stringify(delivery()).replace('"Occupancy"', '"Occ\\ud800"')), 'lone_surrogate'],
      ['a NUL in a status', Buffer.from(JSON.stringify(delivery()).replace('CurrentlyOccupied', 'Currently\\u0000Occupied')), 'nul_character'],
      ['two Id keys', Buffer.from(JSON.stringify(delivery()).replace('{"Id"', `{"Id":"${delivery().Id}","Id"`)), 'duplicate_key'],
      ['invalid UTF-8', Buffer.concat([Buffer.from('{"Id":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]), 'invalid_utf8'],
    ];
    for (const [what, raw, reason] of refusals) {
      const res = await send(receiver.url, signedBytes(raw));
      expect([what, res.status, res.json]).toEqual([what, 400, { error: reason }]);
    }
    const [count] = await target.store.query<{ n: unknown }>('SELECT count(*) AS n FROM webhook_deliveries');
    expect(Number(count!.n)).toBe(2);
  });
});

describe('503 means transient', () => {
  it('a data error from either database is 422 (a retry cannot fix it); connection, busy and lock errors are 503', async () => {
    await requirePostgres();
    const sql = postgres(PG_BASE_URL, { max: 1, onnotice: () => {} });
    let nul: unknown;
    try {
      await sql.unsafe('SELECT $1::text AS t', ['a\u0000b']);
    } catch (error) {
      nul = error;
    } finally {
      await sql.end();
    }
    expect((nul as { code: string }).code).toMatch(/^22/);
    expect(storageRefusal(nul)).toMatchObject({ status: 422, reason: 'unstorable' });
    expect(storageRefusal(new Error('wrapped', { cause: nul }))).toMatchObject({ status: 422 });

    const closed = postgres('postgres://postgres@127.0.0.1:1/test', { max: 1, connect_timeout: 2, onnotice: () => {} });
    let refused: unknown;
    try {
      await closed.unsafe('SELECT 1');
    } catch (error) {
      refused = error;
    } finally {
      await closed.end();
    }
    expect(storageRefusal(refused)).toMatchObject({ status: 503, reason: 'storage_failed' });
    for (const code of ['SQLITE_BUSY', 'SQLITE_LOCKED', '57P01', '40P01', '53300', 'CONNECTION_ENDED']) {
      expect(storageRefusal(Object.assign(new Error(code), { code })).status, code).toBe(503);
    }
    for (const code of ['SQLITE_CONSTRAINT_CHECK', 'SQLITE_TOOBIG', '23505', '22P02']) {
      expect(storageRefusal(Object.assign(new Error(code), { code })).status, code).toBe(422);
    }
  });
});

describe('quiet under attack', () => {
  it('logs the first refusal of each reason in full and the rest of the interval as one count', () => {
    const { logger, records } = memoryLogger();
    const log = new RefusalLog(logger, 60_000);
    for (let i = 0; i < 10_000; i++) log.record('warn', { reason: 'signature_mismatch', status: 401 }, 'webhook request refused');
    for (let i = 0; i < 3; i++) log.record('info', { reason: 'not_found', status: 404 }, 'webhook request refused');
    expect(records()).toHaveLength(2);
    log.flush();
    const lines = records();
    expect(lines).toHaveLength(4);
    expect(lines.slice(2).map((l) => [l.reason, l.refused])).toEqual([['signature_mismatch', 9_999], ['not_found', 2]]);
    log.record('warn', { reason: 'signature_mismatch', status: 401 }, 'webhook request refused');
    expect(records()).toHaveLength(5);
    log.close();
  });

  it('a flood of forged deliveries writes a handful of log lines and counts each refusal for /metrics', async () => {
    target = await migratedStore('sqlite', 'hardening');
    const { logger, lines } = memoryLogger();
    let refused = 0;
    receiver = await startReceiver({ deliveries: DELIVERIES, 
      store: target.store,
      customers: [customer(CUSTOMER_A, { webhookSecrets: [SECRET_A] })],
      clock: new FakeClock(NOW),
      logger,
      onOutcome: (o) => void (o.status === 401 && refused++),
    });
    const before = lines.length;
    const forged = { headers: { 'Content-Type': 'application/json', 'X-Service-Signature': signatureHeader(SECRET_A, 'other', T) }, body: Buffer.from(JSON.stringify(delivery())) };
    for (let i = 0; i < 300; i++) await send(receiver.url, forged);
    expect(refused).toBe(300);
    expect(lines.length - before).toBeLessThanOrEqual(2);
  });

  it('the budget of unauthenticated bytes refuses beyond its limit and gives back what it took', () => {
    const budget = new PendingBudget(100);
    expect(budget.reserve(60)).toBe(true);
    expect(budget.reserve(50)).toBe(false);
    expect(budget.used).toBe(60);
    budget.release(60);
    expect(budget.reserve(100)).toBe(true);
  });

  it('gzip inflaters take at most a quarter of the budget, each charged in full, and give it back', () => {
    const budget = new PendingBudget(8 * INFLATER_BYTES);
    expect(budget.maxInflaters).toBe(2);
    expect([budget.reserveInflater(), budget.reserveInflater(), budget.reserveInflater()]).toEqual([true, true, false]);
    expect(budget.used).toBe(2 * INFLATER_BYTES);
    budget.releaseInflater();
    expect(budget.reserveInflater()).toBe(true);
    budget.releaseInflater();
    budget.releaseInflater();
    expect(budget.used).toBe(0);
    // A budget smaller than four inflaters still lets one through.
    expect(new PendingBudget(64 * 1024).maxInflaters).toBe(1);
  });
});

describe('one reading of every request', () => {
  const request = (rawHeaders: string[], httpVersion = '1.1') => {
    const headers: Record<string, string> = {};
    for (let i = 0; i < rawHeaders.length; i += 2) headers[rawHeaders[i]!.toLowerCase()] ??= rawHeaders[i + 1]!;
    return { rawHeaders, headers, httpVersion } as unknown as IncomingMessage;
  };
  const problem = (req: IncomingMessage, also: string[] = []) => {
    try {
      checkFraming(req, also);
      return 'ok';
    } catch (error) {
      return `${(error as { status: number }).status} ${JSON.stringify((error as { details: unknown }).details)}`;
    }
  };

  it('refuses what a lenient parser or a proxy could read another way, and lets a plain request through', () => {
    expect(problem(request(['Host', 'hooks.example.com:8443', 'Content-Length', '2']))).toBe('ok');
    expect(problem(request(['Host', '[::1]:8080', 'Transfer-Encoding', 'chunked']))).toBe('ok');
    expect(problem(request(['Content-Length', '2'], '1.0'))).toBe('ok');
    expect(problem(request(['Host', 'a', 'host', 'b']))).toBe('400 {"problem":"duplicate_header","header":"host"}');
    expect(problem(request(['Host', 'a', 'X-Token', '1', 'x-token', '1']), ['x-token'])).toBe('400 {"problem":"duplicate_header","header":"x-token"}');
    expect(problem(request(['Host', 'a', 'X-Other', '1', 'X-Other', '2']))).toBe('ok');
    expect(problem(request(['Content-Length', '2']))).toBe('400 {"problem":"missing_host"}');
    expect(problem(request(['Host', 'a b']))).toBe('400 {"problem":"invalid_host"}');
    expect(problem(request(['Host', 'user@a']))).toBe('400 {"problem":"invalid_host"}');
    expect(problem(request(['Host', 'a', 'X-Note', 'a\u0000b']))).toBe('400 {"problem":"control_character","header":"x-note"}');
    expect(problem(request(['Host', 'a', 'X-Note', 'a\tb']))).toBe('ok');
    expect(problem(request(['Host', 'a', 'Transfer-Encoding', 'chunked'], '1.0'))).toBe('400 {"problem":"transfer_encoding_in_http_1_0"}');
    expect(problem(request(['Host', 'a', 'Transfer-Encoding', 'chunked', 'Content-Length', '5']))).toBe('400 {"problem":"content_length_with_transfer_encoding"}');
    expect(problem(request(['Host', 'a', 'Transfer-Encoding', 'gzip, chunked']))).toBe('400 {"problem":"unsupported_transfer_encoding"}');
  });
});

describe('stopping', () => {
  it('answers a delivery the database never answers with 503 stopping once the grace is over, and closes', async () => {
    target = await migratedStore('sqlite', 'hardening');
    let calls = 0;
    // A database that takes the write and never answers (a black-holed network path).
    const silent = flakyStore(target.store);
    const hanging = new Proxy(silent, {
      get: (t, prop) => (prop === 'storeDelivery' ? () => (calls++, new Promise(() => {})) : Reflect.get(t, prop, t)),
    });
    const { logger, records } = memoryLogger();
    receiver = await startReceiver({ deliveries: DELIVERIES,  store: hanging, customers: [customer(CUSTOMER_A, { webhookSecrets: [SECRET_A] })], clock: new FakeClock(NOW), logger, closeGraceMs: 100 });
    const raw = Buffer.from(JSON.stringify(delivery()));
    const answer = send(receiver.url, signedBytes(raw));
    await waitFor(() => calls === 1, 'the delivery to reach the database');
    expect(receiver.handler.waiting).toEqual({ body: 0, database: 1 });
    const closed = receiver.close();
    const res = await answer;
    expect([res.status, res.json, res.headers['retry-after'], res.headers.connection]).toEqual([503, { error: 'stopping' }, '5', 'close']);
    await closed;
    receiver = undefined;
    expect(records().find((r) => r.level === 40 && String(r.msg).includes('answered 503'))?.msg).toBe(
      'webhook receiver stopping: 1 delivery still waiting for the database after 100 ms; answered 503 so the platform sends them again',
    );
  });
});
