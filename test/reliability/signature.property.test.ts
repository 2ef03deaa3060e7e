import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import ts from 'typescript';
import { afterAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { SignatureVerificationError } from '../../src/errors.ts';
import { CustomerAuthenticator } from '../../src/webhooks/authenticate.ts';
import { computeSignature, verifySignature } from '../../src/webhooks/signature.ts';
import { Figures, scaled } from './figures.ts';

/**
 * Properties of src/webhooks/signature.ts beyond test/webhooks/signature.property.test.ts (which covers
 * sign-then-verify, changes to body/t/s, and header strings with one fixed secret and clock).
 *
 * Constant time is proven by construction, not by a stopwatch: node:crypto is wrapped (vi.mock works for the
 * builtins of vite-transformed modules), so the tests see every comparison the verifier makes, and the source is
 * checked so that no other comparison touches a digest. A timing measurement would be a flaky assertion on a loaded
 * CI machine (the brief rules those out) and could only ever show "no difference found".
 */
const calls = vi.hoisted(() => ({ timingSafeEqual: [] as Array<[number, number]> }));
vi.mock('node:crypto', async (importOriginal) => {
  const original = await importOriginal<typeof import('node:crypto')>();
  const timingSafeEqual = (a: NodeJS.ArrayBufferView, b: NodeJS.ArrayBufferView) => {
    calls.timingSafeEqual.push([a.byteLength, b.byteLength]);
    return original.timingSafeEqual(a, b);
  };
  return { ...original, default: { ...original, timingSafeEqual }, timingSafeEqual };
});

const RUNS = scaled(1000);
const REASONS = ['no_secret', 'missing_header', 'malformed_header', 'no_match', 'stale_timestamp', 'future_timestamp'];
const HEX = '0123456789ABCDEF';
const secretArb = fc.string({ minLength: 64, maxLength: 256, unit: 'grapheme' });
const bodyArb = fc.oneof(fc.uint8Array({ maxLength: 512 }).map((a) => Buffer.from(a)), fc.string({ maxLength: 512, unit: 'binary' }));
const figures = new Figures({ section: 'signature', title: 'Signature module: properties (fast-check) and constant-time comparison' }, [
  'signature/arbitrary-input',
  'signature/rotation',
  'signature/tolerance',
  'signature/constant-time',
]);
afterAll(() => void figures.publish());

function reasonOf(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (error) {
    if (!(error instanceof SignatureVerificationError)) throw error;
    return error.reason;
  }
}

beforeEach(() => {
  calls.timingSafeEqual.length = 0;
});

describe('signature verification under arbitrary input', () => {
  it('any header (string, repeated, absent), any secret list, clock and tolerance: only the typed error, never a secret in it', () => {
    const headerArb = fc.oneof(
      fc.string({ maxLength: 200, unit: 'binary' }),
      fc.tuple(fc.integer({ min: -1, max: 99_999_999_999 }), fc.string({ maxLength: 70, unit: fc.constantFrom(...'0123456789abcdefABCDEFxyz =,') }))
        .map(([t, s]) => `t=${t},s=${s}`),
      fc.array(fc.string({ maxLength: 100 }), { maxLength: 3 }),
      fc.constantFrom(undefined, null, '', ' ', ',', 't=,s=', 's=1,t=1,s=1'),
    );
    const secretsArb = fc.array(fc.oneof(secretArb, fc.constant(''), fc.string({ maxLength: 10 })), { maxLength: 3 });
    fc.assert(
      fc.property(headerArb, bodyArb, secretsArb, fc.integer({ min: -1e13, max: 1e13 }), fc.integer({ min: 0, max: 1e9 }), (header, body, secrets, now, toleranceMs) => {
        try {
          verifySignature({ header, rawBody: body, secrets, now, toleranceMs });
        } catch (error) {
          expect(error).toBeInstanceOf(SignatureVerificationError);
          const e = error as SignatureVerificationError;
          expect(REASONS).toContain(e.reason);
          for (const secret of secrets.filter((s) => s.length >= 8)) expect(e.message).not.toContain(secret);
        }
      }),
      { numRuns: RUNS },
    );
    figures.record({ key: 'signature/arbitrary-input', tried: 'arbitrary header, secret list, clock and tolerance (fast-check)', count: RUNS, held: 'only SignatureVerificationError with a known reason, no secret in its message' });
  });

  it('during a rotation, the secret that signed is the one reported, and a third secret never verifies', () => {
    fc.assert(
      fc.property(fc.uniqueArray(secretArb, { minLength: 3, maxLength: 3 }), bodyArb, fc.integer({ min: 0, max: 9_999_999_999 }), fc.nat(1), (secrets, body, t, which) => {
        const [current, previous, stranger] = secrets as [string, string, string];
        const now = t * 1000;
        const signer = which === 0 ? current : previous;
        expect(verifySignature({ header: `t=${t},s=${computeSignature(signer, t, body)}`, rawBody: body, secrets: [current, previous], now }).secretIndex).toBe(which);
        expect(reasonOf(() => verifySignature({ header: `t=${t},s=${computeSignature(stranger, t, body)}`, rawBody: body, secrets: [current, previous], now }))).toBe('no_match');
      }),
      { numRuns: RUNS },
    );
    figures.record({ key: 'signature/rotation', tried: 'three random secrets: sign with current or previous, or a stranger', count: RUNS, held: 'the signing secret is the one reported; a stranger is no_match' });
  });

  it('accepts exactly when |now - t| is within the tolerance, and names the direction otherwise', () => {
    fc.assert(
      fc.property(secretArb, bodyArb, fc.integer({ min: 0, max: 9_999_999_999 }), fc.integer({ min: -1e7, max: 1e7 }), fc.integer({ min: 0, max: 5e6 }), (secret, body, t, skewMs, toleranceMs) => {
        const header = `t=${t},s=${computeSignature(secret, t, body)}`;
        const reason = reasonOf(() => verifySignature({ header, rawBody: body, secrets: [secret], now: t * 1000 + skewMs, toleranceMs }));
        expect(reason).toBe(skewMs > toleranceMs ? 'stale_timestamp' : -skewMs > toleranceMs ? 'future_timestamp' : undefined);
      }),
      { numRuns: RUNS },
    );
    figures.record({ key: 'signature/tolerance', tried: 'random skew and tolerance around a valid signature', count: RUNS, held: 'accepted iff within the tolerance; stale/future named correctly' });
  });
});

describe('constant-time comparison', () => {
  it('every digest comparison is one crypto.timingSafeEqual over the 32 digest bytes per secret, wherever the first difference is', () => {
    const secrets = ['c'.repeat(64), 'p'.repeat(64)];
    const body = Buffer.from('{"Id":"x"}');
    const t = 1_767_000_000;
    const good = computeSignature(secrets[0]!, t, body);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 63 }), fc.integer({ min: 1, max: 15 }), fc.boolean(), (at, delta, lower) => {
        const changed = good.slice(0, at) + HEX[(HEX.indexOf(good[at]!) + delta) % 16] + good.slice(at + 1);
        calls.timingSafeEqual.length = 0;
        expect(reasonOf(() => verifySignature({ header: `t=${t},s=${lower ? changed.toLowerCase() : changed}`, rawBody: body, secrets, now: t * 1000 }))).toBe('no_match');
        // The same work whether the first differing character is the first or the last: one compare of the 32 digest
        // bytes for each secret, no early exit after a mismatch (nor after a match: the valid case below makes the
        // same calls). Upper or lower case hex decode to the same bytes.
        expect(calls.timingSafeEqual).toEqual([[32, 32], [32, 32]]);
      }),
      { numRuns: 256 },
    );
    calls.timingSafeEqual.length = 0;
    expect(verifySignature({ header: `t=${t},s=${good}`, rawBody: body, secrets, now: t * 1000 }).secretIndex).toBe(0);
    expect(calls.timingSafeEqual).toEqual([[32, 32], [32, 32]]);
    figures.record({ key: 'signature/constant-time', tried: 'mismatch at each of the 64 hex positions, either case (and the match), timingSafeEqual observed', count: 257, held: 'exactly one 32-byte timingSafeEqual per secret, no early exit' });
  });

  it('custom header values are compared as SHA-256 digests with timingSafeEqual, whatever their length', () => {
    const auth = new CustomerAuthenticator([
      { id: 'c1', apiKey: 'k', apiSecret: 'apisecret-unused', webhookSecrets: [], webhookHeaders: { 'X-Token': 'the-expected-token-value' } },
    ]);
    for (const value of ['x', 'the-expected-token-valuE', 'the-expected-token-value-and-more', 'the-expected-token-value']) {
      calls.timingSafeEqual.length = 0;
      try {
        auth.prepare({ 'x-token': value }, 0, 300_000);
      } catch {
        // a refusal is fine; what matters is how the value was compared
      }
      expect(calls.timingSafeEqual).toEqual([[32, 32]]);
    }
  });

  it('the source compares digests only through timingSafeEqual (no ===, startsWith or localeCompare on a digest)', () => {
    const path = new URL('../../src/webhooks/signature.ts', import.meta.url);
    const source = ts.createSourceFile('signature.ts', readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
    const functions = new Map<string, ts.FunctionDeclaration>();
    source.forEachChild((node) => {
      if (ts.isFunctionDeclaration(node) && node.name) functions.set(node.name.text, node);
    });
    const callsIn = (node: ts.Node): ts.CallExpression[] => {
      const found: ts.CallExpression[] = [];
      const visit = (n: ts.Node) => {
        if (ts.isCallExpression(n)) found.push(n);
        n.forEachChild(visit);
      };
      visit(node);
      return found;
    };
    const calleeName = (c: ts.CallExpression) => (ts.isIdentifier(c.expression) ? c.expression.text : ts.isPropertyAccessExpression(c.expression) ? c.expression.name.text : '');

    // digestsEqual: a length check, then timingSafeEqual decides.
    const digestsEqual = functions.get('digestsEqual');
    expect(digestsEqual, 'signature.ts has a digestsEqual function').toBeDefined();
    expect(callsIn(digestsEqual!).map(calleeName)).toContain('timingSafeEqual');

    // createSignatureVerifier (which verifySignature runs): each computed digest goes straight into digestsEqual, and
    // no string comparison touches `s`.
    const verify = functions.get('createSignatureVerifier')!;
    const computeCalls = callsIn(verify).filter((c) => calleeName(c) === 'digest');
    expect(computeCalls.length).toBeGreaterThan(0);
    for (const c of computeCalls) expect(ts.isCallExpression(c.parent) && calleeName(c.parent) === 'digestsEqual').toBe(true);
    const comparisonsOnS: string[] = [];
    const visit = (n: ts.Node) => {
      if (ts.isBinaryExpression(n) && [ts.SyntaxKind.EqualsEqualsEqualsToken, ts.SyntaxKind.EqualsEqualsToken, ts.SyntaxKind.ExclamationEqualsEqualsToken, ts.SyntaxKind.ExclamationEqualsToken].includes(n.operatorToken.kind)) {
        const text = n.getText(source);
        if (/\bs\b/.test(text) || /\breceived\b/.test(text) || text.includes('computeDigest')) comparisonsOnS.push(text);
      }
      if (ts.isCallExpression(n) && ['startsWith', 'localeCompare', 'includes', 'indexOf', 'endsWith'].includes(calleeName(n)) && /\bs\b/.test(n.getText(source))) comparisonsOnS.push(n.getText(source));
      n.forEachChild(visit);
    };
    visit(verify);
    expect(comparisonsOnS).toEqual([]);
  });
});
