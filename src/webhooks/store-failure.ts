import { Refusal } from './refusal.ts';

/**
 * The answer for a delivery the database did not store. 503 makes the platform send it again, so it is only right
 * when a retry can succeed: the database unreachable, restarting, busy or locked, out of connections or disk. When
 * the database refused the delivery for what it contains (a constraint, a value it cannot hold), every retry would
 * fail the same way: 422, and the refusal is logged as an error (validation should have caught it first).
 */

const TRANSIENT = [
  /^ECONN/,
  /^ETIMEDOUT$/,
  /^EPIPE$/,
  /^ENOSPC$/,
  /^CONNECTION_/,
  /^CONNECT_TIMEOUT$/,
  /^08/, // connection exception
  /^53/, // insufficient resources (too many connections, disk full, out of memory)
  /^57P0[1-3]$/, // admin shutdown, crash shutdown, cannot connect now
  /^40001$/, // serialization failure
  /^40P01$/, // deadlock detected
  /^55P03$/, // lock not available
  /^SQLITE_(BUSY|LOCKED|IOERR|FULL|PROTOCOL|CANTOPEN)/,
];

const PERMANENT = [
  /^22/, // data exception (a value the column cannot hold, a NUL in text)
  /^23/, // integrity constraint violation
  /^SQLITE_(CONSTRAINT|MISMATCH|TOOBIG|RANGE)/,
];

function codes(error: unknown): string[] {
  const out: string[] = [];
  for (let e: unknown = error, depth = 0; e && typeof e === 'object' && depth < 6; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') out.push(code);
  }
  return out;
}

export function storageRefusal(error: unknown): Refusal {
  const found = codes(error);
  const permanent = found.some((code) => PERMANENT.some((p) => p.test(code))) && !found.some((code) => TRANSIENT.some((p) => p.test(code)));
  return permanent
    ? new Refusal(422, 'unstorable', { codes: found }, { cause: error })
    : new Refusal(503, 'storage_failed', { codes: found }, { cause: error });
}
