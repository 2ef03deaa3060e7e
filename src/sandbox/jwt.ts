import { createHmac, timingSafeEqual } from 'node:crypto';
import type { SandboxScope } from './interfaces.ts';

/** Claims of a sandbox idToken. `customerId` and `write` are the sandbox's names for the customer and user-write claims. */
export interface TokenClaims {
  iss: string;
  sub: string;
  customerId: string;
  scopes: SandboxScope[];
  /** Write permission of the user behind the key (mutations need it besides WritePublicApi). */
  write: boolean;
  iat: number;
  exp: number;
  jti: string;
}

const HEADER = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');

function signature(input: string, key: Buffer): Buffer {
  return createHmac('sha256', key).update(input).digest();
}

export function signJwt(claims: TokenClaims, key: Buffer): string {
  const body = `${HEADER}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
  return `${body}.${signature(body, key).toString('base64url')}`;
}

/** Checks structure, algorithm and signature. Expiry and revocation are the caller's business (they need the clock). */
export function verifyJwt(token: string, key: Buffer): TokenClaims | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  const [header, payload, sig] = parts as [string, string, string];
  try {
    const head = JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as { alg?: unknown };
    if (head.alg !== 'HS256') return undefined;
    const expected = signature(`${header}.${payload}`, key);
    const given = Buffer.from(sig, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as TokenClaims;
    if (typeof claims.exp !== 'number' || typeof claims.customerId !== 'string' || !Array.isArray(claims.scopes)) {
      return undefined;
    }
    return claims;
  } catch {
    return undefined;
  }
}
