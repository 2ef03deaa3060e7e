import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { bodyExcerpt } from '../src/api/auth.ts';
import { encodingsOf, MIN_FRAGMENT, SecretRegistry } from '../src/secrets.ts';

/** Secrets with every character that changes under an encoding: / + " \ % and a space. */
const SECRETS = [
  'aB3/dE6+gH9"jK2\\mN5%pQ8 sT1/vW4+yZ7',
  'sk_live/0123456789+abcdef"ghij\\klmn%20opqr',
  '////++++""""\\\\\\\\%%%%////++++',
];

function registry(...values: string[]): SecretRegistry {
  const r = new SecretRegistry();
  for (const v of values) r.add(v);
  return r;
}

/** Every substring of `text` of MIN_FRAGMENT characters or more that is also a substring of `secret`. */
function leaks(text: string, secret: string): string[] {
  const found: string[] = [];
  for (const form of encodingsOf(secret)) {
    for (let i = 0; i + MIN_FRAGMENT <= form.length; i++) {
      const piece = form.slice(i, i + MIN_FRAGMENT);
      if (text.includes(piece)) found.push(piece);
    }
  }
  return found;
}

describe('no secret in any form', () => {
  it.each(SECRETS)('removes %j raw, JSON-escaped, with \\/, URL-encoded (both hex cases, + for space) and as base64', (secret) => {
    const r = registry(secret);
    const forms = [
      secret,
      JSON.stringify(secret),
      JSON.stringify(secret).replace(/\//g, '\\/'),
      encodeURIComponent(secret),
      encodeURIComponent(secret).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()),
      encodeURIComponent(secret).replace(/%20/g, '+'),
      Buffer.from(secret).toString('base64'),
      JSON.stringify({ request: { ApiSecret: secret } }),
      `secret=${encodeURIComponent(secret)}&x=1`,
    ];
    for (const form of forms) {
      const out = r.scrub(`before ${form} after`);
      expect(out, form).toContain('[REDACTED]');
      expect(leaks(out, secret), form).toEqual([]);
      expect(out.startsWith('before ')).toBe(true);
    }
  });

  it('removes any fragment of 12 or more characters, as a cut excerpt leaves at either end', () => {
    for (const secret of SECRETS) {
      const r = registry(secret);
      for (let cut = MIN_FRAGMENT; cut < secret.length; cut++) {
        expect(leaks(r.scrub(`…${secret.slice(0, cut)}`), secret), `prefix ${cut}`).toEqual([]);
        expect(leaks(r.scrub(`${secret.slice(secret.length - cut)}…`), secret), `suffix ${cut}`).toEqual([]);
        expect(leaks(r.scrub(`x${JSON.stringify(secret).slice(0, cut)}`), secret), `escaped prefix ${cut}`).toEqual([]);
      }
    }
  });

  it('finds random secrets at random places of random text in every encoding', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 16, maxLength: 80, unit: fc.constantFrom(...'abcXYZ019/+"\\% =&?'.split('')) }),
        fc.string({ maxLength: 60 }),
        fc.string({ maxLength: 60 }),
        fc.nat(7),
        (secret, before, after, encoding) => {
          const r = registry(secret);
          const form = encodingsOf(secret)[encoding % encodingsOf(secret).length]!;
          expect(leaks(r.scrub(`${before}${form}${after}`), secret)).toEqual([]);
        },
      ),
    );
  });

  it('leaves ordinary text alone', () => {
    const r = registry(...SECRETS);
    const text = 'POST /api/v1/auth: HTTP 400: {"error":"invalid request"} (retrying in 500 ms)';
    expect(r.scrub(text)).toBe(text);
  });

  it('an error body that echoes the secret across the 200-character cut shows none of it', () => {
    for (const secret of SECRETS) {
      const r = registry(secret);
      for (const escape of [false, true]) {
        let text = JSON.stringify({ error: 'invalid request', detail: 'x'.repeat(150), received: { ApiKey: 'key-1', ApiSecret: secret } });
        if (escape) text = text.replace(/\//g, '\\/');
        const excerpt = bodyExcerpt({ status: 400, headers: {}, body: Buffer.from(text) }, r);
        expect(leaks(excerpt, secret), excerpt).toEqual([]);
        expect(excerpt.length).toBeLessThanOrEqual(2 + 201);
      }
    }
  });

  it('a deleted secret is no longer removed, the others still are', () => {
    const r = registry(SECRETS[0]!, SECRETS[1]!);
    r.delete(SECRETS[0]);
    expect(r.scrub(SECRETS[0]!)).toBe(SECRETS[0]);
    expect(r.scrub(SECRETS[1]!)).toBe('[REDACTED]');
  });
});
