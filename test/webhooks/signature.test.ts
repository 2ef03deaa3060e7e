import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { SignatureVerificationError } from '../../src/errors.ts';
import {
  computeSignature,
  parseSignatureHeader,
  signatureHeader,
  verifySignature,
} from '../../src/webhooks/signature.ts';

interface Vector {
  name: string;
  secretBase64: string;
  t: number;
  bodyBase64: string;
  gzipBase64?: string;
  expected: string;
}

// Computed by test/fixtures/webhooks/generate-vectors.sh with openssl, not by our code.
const vectors = JSON.parse(
  readFileSync(new URL('../fixtures/webhooks/vectors.json', import.meta.url), 'utf8'),
) as Vector[];
const decode = (v: Vector) => ({
  secret: Buffer.from(v.secretBase64, 'base64').toString('utf8'),
  body: Buffer.from(v.bodyBase64, 'base64'),
});

const SECRET = 'a'.repeat(32) + 'B'.repeat(32);
const OTHER = 'z'.repeat(64);
const BODY = '{"Id":"x","Data":[]}';
const T = 1_767_261_600;
const atT = (offsetSeconds = 0) => (T + offsetSeconds) * 1000;

function reasonOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(SignatureVerificationError);
    return (error as SignatureVerificationError).reason;
  }
  throw new Error('expected a SignatureVerificationError, nothing was thrown');
}

describe('openssl test vectors', () => {
  it('covers unicode, whitespace-significant, empty and gzip bodies', () => {
    const names = vectors.map((v) => v.name).join(' ');
    for (const word of ['unicode-body', 'unicode-secret', 'whitespace', 'empty', 'gzip', '256-char']) expect(names).toContain(word);
  });

  for (const vector of vectors) {
    it(`computes the openssl signature for ${vector.name}`, () => {
      const { secret, body } = decode(vector);
      expect(computeSignature(secret, vector.t, body)).toBe(vector.expected);
      // A string body is hashed as its UTF-8 bytes, identical to the Buffer.
      expect(computeSignature(secret, vector.t, body.toString('utf8'))).toBe(vector.expected);
      const verified = verifySignature({
        header: `t=${vector.t},s=${vector.expected}`,
        rawBody: body,
        secrets: [secret],
        now: vector.t * 1000,
      });
      expect(verified).toEqual({ t: vector.t, secretIndex: 0 });
    });
  }

  it('signs the decompressed bytes of a gzip delivery, not the wire bytes', () => {
    for (const vector of vectors.filter((v) => v.gzipBase64)) {
      const { secret, body } = decode(vector);
      const wire = Buffer.from(vector.gzipBase64!, 'base64');
      expect(gunzipSync(wire).equals(body)).toBe(true);
      expect(computeSignature(secret, vector.t, gunzipSync(wire))).toBe(vector.expected);
      expect(reasonOf(() =>
        verifySignature({ header: `t=${vector.t},s=${vector.expected}`, rawBody: wire, secrets: [secret], now: vector.t * 1000 }),
      )).toBe('no_match');
    }
  });

  it('refuses a re-serialised copy of a whitespace-significant body', () => {
    const vector = vectors.find((v) => v.name === 'whitespace-significant-body')!;
    const { secret, body } = decode(vector);
    const reserialised = JSON.stringify(JSON.parse(body.toString('utf8')));
    expect(reasonOf(() =>
      verifySignature({ header: `t=${vector.t},s=${vector.expected}`, rawBody: reserialised, secrets: [secret], now: vector.t * 1000 }),
    )).toBe('no_match');
  });
});

describe('verifySignature', () => {
  const header = signatureHeader(SECRET, BODY, T);

  it('accepts a valid signature with a Clock or epoch milliseconds', () => {
    expect(verifySignature({ header, rawBody: BODY, secrets: [SECRET], now: new FakeClock(atT()) })).toEqual({ t: T, secretIndex: 0 });
    expect(verifySignature({ header, rawBody: Buffer.from(BODY), secrets: [SECRET], now: atT(10) }).t).toBe(T);
  });

  it('accepts lowercase hex', () => {
    expect(verifySignature({ header: header.toLowerCase(), rawBody: BODY, secrets: [SECRET], now: atT() }).t).toBe(T);
  });

  it('accepts both secrets during a rotation and says which one matched', () => {
    const oldHeader = signatureHeader(OTHER, BODY, T);
    expect(verifySignature({ header, rawBody: BODY, secrets: [SECRET, OTHER], now: atT() }).secretIndex).toBe(0);
    expect(verifySignature({ header: oldHeader, rawBody: BODY, secrets: [SECRET, OTHER], now: atT() }).secretIndex).toBe(1);
  });

  it('refuses a tampered body', () => {
    expect(reasonOf(() => verifySignature({ header, rawBody: BODY.replace('x', 'y'), secrets: [SECRET], now: atT() }))).toBe('no_match');
    expect(reasonOf(() => verifySignature({ header, rawBody: `${BODY} `, secrets: [SECRET], now: atT() }))).toBe('no_match');
  });

  it('refuses a wrong secret', () => {
    expect(reasonOf(() => verifySignature({ header, rawBody: BODY, secrets: [OTHER], now: atT() }))).toBe('no_match');
  });

  it('refuses a stale and a future timestamp, with the 300 s default tolerance inclusive', () => {
    expect(verifySignature({ header, rawBody: BODY, secrets: [SECRET], now: atT(300) }).t).toBe(T);
    expect(verifySignature({ header, rawBody: BODY, secrets: [SECRET], now: atT(-300) }).t).toBe(T);
    expect(reasonOf(() => verifySignature({ header, rawBody: BODY, secrets: [SECRET], now: atT(301) }))).toBe('stale_timestamp');
    expect(reasonOf(() => verifySignature({ header, rawBody: BODY, secrets: [SECRET], now: atT(-301) }))).toBe('future_timestamp');
    expect(reasonOf(() => verifySignature({ header, rawBody: BODY, secrets: [SECRET], now: atT(61), toleranceMs: 60_000 }))).toBe('stale_timestamp');
  });

  it('refuses a missing header and reports no configured secret', () => {
    for (const missing of [undefined, null, '', '   ', []]) {
      expect(reasonOf(() => verifySignature({ header: missing, rawBody: BODY, secrets: [SECRET], now: atT() }))).toBe('missing_header');
    }
    expect(reasonOf(() => verifySignature({ header, rawBody: BODY, secrets: [], now: atT() }))).toBe('no_secret');
    expect(reasonOf(() => verifySignature({ header, rawBody: BODY, secrets: [''], now: atT() }))).toBe('no_secret');
  });

  it('never puts the secret in the error message', () => {
    try {
      verifySignature({ header, rawBody: BODY, secrets: [OTHER], now: atT() });
    } catch (error) {
      expect(String((error as Error).message)).not.toContain(OTHER);
    }
  });
});

describe('parseSignatureHeader', () => {
  const s = computeSignature(SECRET, T, BODY);

  it('accepts the parts in either order and whitespace around them', () => {
    for (const header of [`t=${T},s=${s}`, `s=${s},t=${T}`, ` t = ${T} , s = ${s} `, `t=${T},\ts=${s.toLowerCase()}`]) {
      expect(parseSignatureHeader(header)).toEqual({ t: T, s: expect.stringMatching(new RegExp(`^${s}$`, 'i')) });
    }
  });

  it.each([
    ['a duplicated t', `t=${T},t=${T},s=${s}`],
    ['a duplicated s', `t=${T},s=${s},s=${s}`],
    ['two joined headers', `t=${T},s=${s}, t=${T},s=${s}`],
    ['an unknown part', `t=${T},s=${s},v1=${s}`],
    ['a trailing comma', `t=${T},s=${s},`],
    ['garbage', 'hello'],
    ['no t', `s=${s}`],
    ['no s', `t=${T}`],
    ['a non-digit t', `t=17x,s=${s}`],
    ['a negative t', `t=-${T},s=${s}`],
    ['a fractional t', `t=${T}.5,s=${s}`],
    ['an empty t', `t=,s=${s}`],
    ['non-hex s', `t=${T},s=${'G'.repeat(64)}`],
    ['a short s', `t=${T},s=${s.slice(1)}`],
    ['a long s', `t=${T},s=${s}0`],
    ['an upper-case key', `T=${T},s=${s}`],
    ['a huge header', `t=${T},s=${s},${'x'.repeat(5000)}`],
  ])('refuses %s as malformed', (_label, header) => {
    expect(reasonOf(() => parseSignatureHeader(header))).toBe('malformed_header');
  });

  it('refuses the header repeated (node:http array form)', () => {
    expect(reasonOf(() => parseSignatureHeader([`t=${T},s=${s}`, `t=${T},s=${s}`]))).toBe('malformed_header');
    expect(parseSignatureHeader([`t=${T},s=${s}`]).t).toBe(T);
  });
});
