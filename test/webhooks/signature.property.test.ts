import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SignatureVerificationError } from '../../src/errors.ts';
import { computeSignature, parseSignatureHeader, verifySignature } from '../../src/webhooks/signature.ts';

const secretArb = fc.string({ minLength: 64, maxLength: 256, unit: 'binary' });
const bodyArb = fc.uint8Array({ maxLength: 2048 }).map((a) => Buffer.from(a));
const tArb = fc.integer({ min: 0, max: 9_999_999_999 });
const skewArb = fc.integer({ min: -300_000, max: 300_000 });
const HEX = '0123456789ABCDEF';

function reasonOf(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (error) {
    if (!(error instanceof SignatureVerificationError)) throw error;
    return error.reason;
  }
}

describe('signature properties', () => {
  it('sign-then-verify holds for every secret, body, t and clock skew within the tolerance', () => {
    fc.assert(
      fc.property(secretArb, bodyArb, tArb, skewArb, fc.boolean(), (secret, body, t, skew, lower) => {
        const s = computeSignature(secret, t, body);
        const header = `t=${t},s=${lower ? s.toLowerCase() : s}`;
        const result = verifySignature({ header, rawBody: body, secrets: [secret], now: t * 1000 + skew });
        expect(result).toEqual({ t, secretIndex: 0 });
      }),
      { numRuns: 300 },
    );
  });

  it('refuses any change to the body', () => {
    fc.assert(
      fc.property(secretArb, bodyArb, tArb, fc.nat(), fc.integer({ min: 1, max: 255 }), fc.constantFrom('flip', 'append', 'drop'), (secret, body, t, at, delta, how) => {
        const header = `t=${t},s=${computeSignature(secret, t, body)}`;
        let changed: Buffer;
        if (how === 'append' || body.length === 0) changed = Buffer.concat([body, Buffer.from([delta])]);
        else if (how === 'drop') changed = Buffer.concat([body.subarray(0, at % body.length), body.subarray((at % body.length) + 1)]);
        else {
          changed = Buffer.from(body);
          changed[at % body.length] = (changed[at % body.length]! + delta) % 256;
        }
        expect(reasonOf(() => verifySignature({ header, rawBody: changed, secrets: [secret], now: t * 1000 }))).toBe('no_match');
      }),
      { numRuns: 300 },
    );
  });

  it('refuses any change to t, even within the tolerance', () => {
    fc.assert(
      fc.property(secretArb, bodyArb, tArb, fc.integer({ min: -300, max: 300 }).filter((d) => d !== 0), (secret, body, t, d) => {
        const s = computeSignature(secret, t, body);
        const other = Math.max(0, t + d);
        fc.pre(other !== t);
        expect(reasonOf(() => verifySignature({ header: `t=${other},s=${s}`, rawBody: body, secrets: [secret], now: t * 1000 }))).toBe('no_match');
      }),
      { numRuns: 300 },
    );
  });

  it('refuses any change to s other than its letter case', () => {
    fc.assert(
      fc.property(secretArb, bodyArb, tArb, fc.integer({ min: 0, max: 63 }), fc.integer({ min: 1, max: 15 }), (secret, body, t, at, delta) => {
        const s = computeSignature(secret, t, body);
        const replaced = HEX[(HEX.indexOf(s[at]!) + delta) % 16]!;
        const changed = s.slice(0, at) + replaced + s.slice(at + 1);
        expect(reasonOf(() => verifySignature({ header: `t=${t},s=${changed}`, rawBody: body, secrets: [secret], now: t * 1000 }))).toBe('no_match');
      }),
      { numRuns: 300 },
    );
  });

  it('arbitrary header strings only ever throw SignatureVerificationError', () => {
    const near = fc
      .tuple(fc.constantFrom('t', 's', 'T', ' t', 'v1', ''), fc.constantFrom('=', ' = ', '', '=='), fc.string({ maxLength: 80 }), fc.constantFrom(',', ', ', ';', ''))
      .map(([k, eq, v, sep]) => `${k}${eq}${v}${sep}`);
    const headerArb = fc.oneof(
      fc.string({ maxLength: 300, unit: 'binary' }),
      fc.array(near, { maxLength: 5 }).map((parts) => parts.join('')),
      fc.array(fc.string(), { maxLength: 3 }),
    );
    fc.assert(
      fc.property(headerArb, bodyArb, (header, body) => {
        const secret = 'k'.repeat(64);
        // parseSignatureHeader alone and verifySignature: both may only fail with the typed error.
        for (const run of [() => parseSignatureHeader(header), () => verifySignature({ header, rawBody: body, secrets: [secret], now: 0 })]) {
          const reason = reasonOf(run);
          expect(['missing_header', 'malformed_header', 'no_match', 'stale_timestamp', 'future_timestamp', undefined]).toContain(reason);
        }
      }),
      { numRuns: 2000 },
    );
  });
});
