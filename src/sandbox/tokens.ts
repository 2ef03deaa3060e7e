import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../clock.ts';
import type { CustomerData, DataModel } from './data.ts';
import { signJwt, verifyJwt, type TokenClaims } from './jwt.ts';
import type { SandboxKey } from './interfaces.ts';

export type TokenCheck =
  | { ok: true; claims: TokenClaims; customer: CustomerData }
  | { ok: false; reason: 'missing' | 'malformed' | 'invalid' | 'expired' | 'revoked' };

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Issues and checks idTokens. Expiry is judged on the sandbox clock; revocation by token id (jti). */
export class TokenService {
  // A fresh signing key per sandbox: tokens of one run never validate against another.
  readonly #signingKey = randomBytes(32);
  readonly #outstanding = new Map<string, { customerId: string; exp: number }>();
  readonly #revoked = new Set<string>();
  readonly #model: DataModel;
  readonly #clock: Clock;
  readonly #expiresIn: number;

  constructor(model: DataModel, clock: Clock, expiresIn: number) {
    this.#model = model;
    this.#clock = clock;
    this.#expiresIn = expiresIn;
  }

  /** Returns undefined for an unknown key or a wrong secret (the caller answers 401 without saying which). */
  issue(apiKey: string, apiSecret: string): { idToken: string; expiresIn: number } | undefined {
    let found: { customer: CustomerData; key: SandboxKey } | undefined;
    for (const customer of this.#model.customers) {
      for (const key of customer.keys) if (key.key === apiKey) found = { customer, key };
    }
    if (!found || !sameSecret(found.key.secret, apiSecret)) return undefined;
    const nowS = Math.floor(this.#clock.now() / 1000);
    this.#prune(nowS);
    const claims: TokenClaims = {
      iss: 'occupancy-sync-sandbox',
      sub: found.key.key,
      customerId: found.customer.id,
      scopes: [...found.key.scopes],
      write: found.key.userCanWrite,
      iat: nowS,
      exp: nowS + this.#expiresIn,
      jti: randomUUID(),
    };
    this.#outstanding.set(claims.jti, { customerId: claims.customerId, exp: claims.exp });
    return { idToken: signJwt(claims, this.#signingKey), expiresIn: this.#expiresIn };
  }

  check(authorization: string | undefined): TokenCheck {
    if (!authorization) return { ok: false, reason: 'missing' };
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!match) return { ok: false, reason: 'malformed' };
    const claims = verifyJwt(match[1]!, this.#signingKey);
    if (!claims) return { ok: false, reason: 'invalid' };
    if (this.#clock.now() >= claims.exp * 1000) return { ok: false, reason: 'expired' };
    if (this.#revoked.has(claims.jti)) return { ok: false, reason: 'revoked' };
    const customer = this.#model.customer(claims.customerId);
    if (!customer) return { ok: false, reason: 'invalid' };
    return { ok: true, claims, customer };
  }

  revoke(jti: string): void {
    this.#revoked.add(jti);
  }

  revokeAll(customerId?: string): void {
    for (const [jti, t] of this.#outstanding) if (!customerId || t.customerId === customerId) this.#revoked.add(jti);
  }

  #prune(nowS: number): void {
    for (const [jti, t] of this.#outstanding) {
      if (t.exp <= nowS) {
        this.#outstanding.delete(jti);
        this.#revoked.delete(jti);
      }
    }
  }
}
