import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { SecretRegistry } from '../../src/logger.ts';
import { decodeJwtClaims, jwtCustomer, jwtScopes } from '../../src/api/jwt.ts';
import { TokenProvider, refreshMargin, tokenInfoFrom, type IssuedToken } from '../../src/api/token.ts';

const MIN = 60_000;

function jwt(claims: Record<string, unknown>): string {
  const part = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${part({ alg: 'HS256', typ: 'JWT' })}.${part(claims)}.c2lnbmF0dXJl`;
}

function setup(options: { expiresIn?: number; exp?: (now: number) => number; margin?: number } = {}) {
  const clock = new FakeClock();
  const secrets = new SecretRegistry();
  let calls = 0;
  let failNext: Error | undefined;
  let gate: Promise<void> | undefined;
  const fetchToken = async (): Promise<IssuedToken> => {
    calls++;
    if (gate) await gate;
    if (failNext) {
      const error = failNext;
      failNext = undefined;
      throw error;
    }
    const now = clock.now();
    const claims: Record<string, unknown> = { sub: 'key', n: calls, iat: Math.floor(now / 1000) };
    if (options.exp) claims.exp = Math.floor(options.exp(now) / 1000);
    return { idToken: jwt(claims), expiresIn: options.expiresIn ?? 900 };
  };
  const provider = new TokenProvider({ fetchToken, clock, refreshMarginMs: options.margin ?? 5 * MIN, secrets });
  return {
    clock,
    secrets,
    provider,
    calls: () => calls,
    failOnce: (error: Error) => void (failNext = error),
    hold: () => {
      let release!: () => void;
      gate = new Promise((r) => (release = r));
      return () => {
        gate = undefined;
        release();
      };
    },
  };
}

describe('TokenProvider', () => {
  it('reuses a 900 s token for 10 minutes, then refreshes before it expires', async () => {
    const t = setup();
    const first = await t.provider.get();
    expect(first.expiresAt - first.obtainedAt).toBe(900_000);
    t.clock.advance(10 * MIN - 1);
    expect((await t.provider.get()).token).toBe(first.token);
    expect(t.calls()).toBe(1);
    t.clock.advance(1);
    const second = await t.provider.get();
    expect(second.token).not.toBe(first.token);
    expect(t.calls()).toBe(2);
    expect(t.provider.refreshes).toBe(1);
  });

  it('caps the refresh margin at half the lifetime and never assumes 900 s', async () => {
    expect(refreshMargin({ obtainedAt: 0, expiresAt: 120_000 }, 5 * MIN)).toBe(60_000);
    expect(refreshMargin({ obtainedAt: 0, expiresAt: 3_600_000 }, 5 * MIN)).toBe(5 * MIN);
    const t = setup({ expiresIn: 120 });
    const first = await t.provider.get();
    t.clock.advance(59_999);
    expect((await t.provider.get()).token).toBe(first.token);
    t.clock.advance(1);
    expect((await t.provider.get()).token).not.toBe(first.token);
  });

  it('uses the JWT exp when it is earlier than expiresIn, and ignores an exp already past (clock skew)', () => {
    const now = Date.UTC(2026, 0, 1);
    const early = tokenInfoFrom({ idToken: jwt({ exp: now / 1000 + 600 }), expiresIn: 900 }, now);
    expect(early.expiresAt).toBe(now + 600_000);
    const late = tokenInfoFrom({ idToken: jwt({ exp: now / 1000 + 1800 }), expiresIn: 900 }, now);
    expect(late.expiresAt).toBe(now + 900_000);
    const skewed = tokenInfoFrom({ idToken: jwt({ exp: now / 1000 - 3600 }), expiresIn: 900 }, now);
    expect(skewed.expiresAt).toBe(now + 900_000);
    const opaque = tokenInfoFrom({ idToken: 'not-a-jwt-token', expiresIn: 300 }, now);
    expect(opaque).toMatchObject({ expiresAt: now + 300_000, claims: undefined });
  });

  it('shares one in-flight refresh among 100 concurrent callers', async () => {
    const t = setup();
    const release = t.hold();
    const all = Promise.all(Array.from({ length: 100 }, () => t.provider.get()));
    release();
    const infos = await all;
    expect(t.calls()).toBe(1);
    expect(new Set(infos.map((i) => i.token)).size).toBe(1);
  });

  it('does not cache a failed refresh: the next caller authenticates again', async () => {
    const t = setup();
    t.failOnce(new Error('auth endpoint down'));
    await expect(t.provider.get()).rejects.toThrow('auth endpoint down');
    await expect(t.provider.get()).resolves.toMatchObject({ token: expect.any(String) });
    expect(t.calls()).toBe(2);
  });

  it('invalidates only the token that was refused, so a burst of 401s causes one re-authentication', async () => {
    const t = setup();
    const first = await t.provider.get();
    expect(t.provider.invalidate(first.token)).toBe(true);
    const second = await t.provider.get();
    expect(t.provider.invalidate(first.token)).toBe(false);
    expect((await t.provider.get()).token).toBe(second.token);
    expect(t.calls()).toBe(2);
  });

  it('lets one caller give up on abort while the shared refresh completes for the others', async () => {
    const t = setup();
    const release = t.hold();
    const controller = new AbortController();
    const aborted = t.provider.get(controller.signal);
    const other = t.provider.get();
    controller.abort(new Error('stop'));
    await expect(aborted).rejects.toThrow('stop');
    release();
    await expect(other).resolves.toMatchObject({ token: expect.any(String) });
    expect(t.calls()).toBe(1);
  });

  it('registers every token it obtains with the secret scrubber', async () => {
    const t = setup();
    const info = await t.provider.get();
    expect(t.secrets.scrub(`Bearer ${info.token}`)).toBe('Bearer [REDACTED]');
  });
});

describe('JWT claims', () => {
  it('decodes claims without verifying, and finds customer and scopes under common names', () => {
    const claims = decodeJwtClaims(jwt({ customerId: 'c-1', scopes: ['ReadPublicApi'] }));
    expect(jwtCustomer(claims)).toBe('c-1');
    expect(jwtScopes(claims)).toEqual(['ReadPublicApi']);
    expect(jwtScopes({ scope: 'ReadPublicApi WritePublicApi' })).toEqual(['ReadPublicApi', 'WritePublicApi']);
    expect(decodeJwtClaims('a.b')).toBeUndefined();
    expect(decodeJwtClaims('a.!!!.c')).toBeUndefined();
  });
});
