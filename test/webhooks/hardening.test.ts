import { gzipSync } from 'node:zlib';
import postgres from 'postgres';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { memoryLogger } from '../../src/logger.ts';
import type { Store } from '../../src/store/types.ts';
import { PendingBudget } from '../../src/webhooks/body.ts';
import { startReceiver, type Receiver } from '../../src/webhooks/receiver.ts';
import { RefusalLog } from '../../src/webhooks/refusal-log.ts';
import { signatureHeader } from '../../src/webhooks/signature.ts';
import { storageRefusal } from '../../src/webhooks/store-failure.ts';
import { CUSTOMER_A, SECRET_A, customer, delivery, send } from './helpers.ts';
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
    receiver = await startReceiver({ store: target.store, customers: [customer(CUSTOMER_A, { webhookSecrets: [SECRET_A] })], clock: new FakeClock(NOW) });
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
    receiver = await startReceiver({
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
});
