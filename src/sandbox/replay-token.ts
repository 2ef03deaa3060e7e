import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * The tokens a replay issues in place of the recorded (removed) ones: HS256 JWTs, signed with a key random per replay,
 * carrying the recorded claims a client reads (the customer, the scopes, iat/exp, so the lifetime is the recorded one
 * on the replayed command's frozen clock) and the pseudonym of the key they were issued to, which picks the recorded
 * answers. sandbox/jwt.ts signs the sandbox's own claim set; this one takes whatever claims were recorded.
 */

const HEADER = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');
/** The claim naming the recorded key; a private name, so it cannot clash with a recorded claim. */
const KEY_CLAIM = 'replayKey';

export class ReplayTokens {
  readonly #key = randomBytes(32);
  #issued = 0;

  issue(key: string, claims: Record<string, unknown>): string {
    this.#issued += 1;
    const payload = { ...claims, iss: 'occupancy-sync-replay', sub: key, [KEY_CLAIM]: key, jti: `replay-${this.#issued}` };
    const body = `${HEADER}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
    return `${body}.${this.#sign(body).toString('base64url')}`;
  }

  /** The recorded key a token of this replay was issued to; undefined for anything else. */
  keyOf(token: string): string | undefined {
    const parts = token.split('.');
    if (parts.length !== 3) return undefined;
    const [header, payload, signature] = parts as [string, string, string];
    const expected = this.#sign(`${header}.${payload}`);
    const given = Buffer.from(signature, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    try {
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
      return typeof claims[KEY_CLAIM] === 'string' ? (claims[KEY_CLAIM] as string) : undefined;
    } catch {
      return undefined;
    }
  }

  #sign(input: string): Buffer {
    return createHmac('sha256', this.#key).update(input).digest();
  }
}
