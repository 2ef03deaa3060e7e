import type { Clock } from '../clock.ts';
import { silentLogger, type Logger, type SecretRegistry } from '../logger.ts';
import { abortable } from './abort.ts';
import { decodeJwtClaims, jwtExpiryMs } from './jwt.ts';
import { tracer } from '../tracing.ts';

/** What the auth endpoint returned (section 2.3 of the API document). */
export interface IssuedToken {
  idToken: string;
  /** Lifetime in seconds. */
  expiresIn: number;
}

export interface TokenInfo {
  token: string;
  /** Local time the auth request was sent (epoch ms): the earliest the platform can have issued the token. */
  obtainedAt: number;
  /** Local time (epoch ms) after which the platform no longer accepts the token. */
  expiresAt: number;
  claims: Record<string, unknown> | undefined;
}

/** Where a token may be kept between processes (see token-cache.ts). */
export interface TokenStore {
  load(now: number): TokenInfo | undefined;
  save(info: TokenInfo): void;
  remove(token: string): void;
}

export interface TokenProviderOptions {
  /** Posts key and secret to the auth endpoint. Called at most once at a time. */
  fetchToken: () => Promise<IssuedToken>;
  clock: Clock;
  /** Refresh when less than this remains; capped at half the token's lifetime. */
  refreshMarginMs: number;
  secrets: SecretRegistry;
  logger?: Logger;
  store?: TokenStore;
}

/** How long before expiry a token is replaced: the configured margin, but never more than half its lifetime. */
export function refreshMargin(info: Pick<TokenInfo, 'obtainedAt' | 'expiresAt'>, configuredMs: number): number {
  const lifetime = Math.max(0, info.expiresAt - info.obtainedAt);
  return Math.min(configuredMs, lifetime / 2);
}

/** Whether a token can still be used for a request made at `now` without refreshing first. */
export function isFresh(info: TokenInfo, now: number, configuredMarginMs: number): boolean {
  return now < info.expiresAt - refreshMargin(info, configuredMarginMs);
}

/**
 * Computes a token's expiry: `expiresIn` counted from when we asked (immune to skew between our clock and the
 * platform's), unless the JWT's own `exp` is earlier. An `exp` already in our past can only be clock skew (the
 * platform just issued the token as valid for `expiresIn`), so it is ignored rather than causing a refresh loop.
 */
export function tokenInfoFrom(issued: IssuedToken, obtainedAt: number, logger: Logger = silentLogger): TokenInfo {
  const claims = decodeJwtClaims(issued.idToken);
  const byLifetime = obtainedAt + issued.expiresIn * 1000;
  const byClaim = jwtExpiryMs(claims);
  let expiresAt = byLifetime;
  if (byClaim !== undefined) {
    if (byClaim <= obtainedAt) {
      logger.warn(
        { jwtExp: new Date(byClaim).toISOString(), localNow: new Date(obtainedAt).toISOString() },
        'the token JWT exp is already past by the local clock; ignoring it and using expiresIn (check the system clock)',
      );
    } else {
      expiresAt = Math.min(byLifetime, byClaim);
    }
  }
  return { token: issued.idToken, obtainedAt, expiresAt, claims };
}

/**
 * Holds one bearer token per API key and replaces it proactively. Concurrent callers share a single in-flight
 * refresh; a failed refresh is not remembered, so the next caller tries again.
 */
export class TokenProvider {
  readonly #options: TokenProviderOptions;
  readonly #logger: Logger;
  #current: TokenInfo | undefined;
  #inflight: Promise<TokenInfo> | undefined;
  #storeChecked = false;
  /** Tokens obtained from the auth endpoint. */
  acquired = 0;
  /** Of those, how many replaced an earlier token (proactive refresh or after invalidation). */
  refreshes = 0;
  /** Tokens taken from the cross-process store instead of authenticating. */
  storeHits = 0;

  constructor(options: TokenProviderOptions) {
    this.#options = options;
    this.#logger = options.logger ?? silentLogger;
  }

  /** A token valid for at least the refresh margin; authenticates first when needed. */
  get(signal?: AbortSignal): Promise<TokenInfo> {
    signal?.throwIfAborted();
    const now = this.#options.clock.now();
    const current = this.#current;
    if (current && isFresh(current, now, this.#options.refreshMarginMs)) return Promise.resolve(current);
    if (!current && !this.#storeChecked && this.#options.store) {
      // Only the first token of the process comes from the store; after that this process owns its tokens.
      this.#storeChecked = true;
      const stored = this.#options.store.load(now);
      if (stored && isFresh(stored, now, this.#options.refreshMarginMs)) {
        this.#options.secrets.add(stored.token);
        this.#current = stored;
        this.storeHits++;
        this.#logger.debug({ expiresAt: new Date(stored.expiresAt).toISOString() }, 'reusing the cached API token');
        return Promise.resolve(stored);
      }
    }
    this.#inflight ??= this.#refresh().finally(() => {
      this.#inflight = undefined;
    });
    return abortable(this.#inflight, signal);
  }

  /**
   * Forgets the token (after a 401). With `token`, only when it is still the current one: twenty requests that
   * all got 401 with the same revoked token must cause one re-authentication, not twenty. Returns whether the
   * token was dropped.
   */
  invalidate(token?: string): boolean {
    const current = this.#current;
    if (!current || (token !== undefined && current.token !== token)) return false;
    this.#current = undefined;
    this.#options.store?.remove(current.token);
    return true;
  }

  async #refresh(): Promise<TokenInfo> {
    const hadToken = this.#current !== undefined || this.acquired > 0;
    const startedAt = this.#options.clock.now();
    const issued = await this.#options.fetchToken();
    this.#options.secrets.add(issued.idToken);
    const info = tokenInfoFrom(issued, startedAt, this.#logger);
    this.#current = info;
    this.acquired++;
    if (hadToken) this.refreshes++;
    tracer().event(hadToken ? 'token.refresh' : 'token.obtain', { 'token.expires_at': new Date(info.expiresAt).toISOString() });
    this.#logger.debug(
      { expiresAt: new Date(info.expiresAt).toISOString(), expiresIn: issued.expiresIn, refresh: hadToken },
      'obtained a new API token',
    );
    try {
      this.#options.store?.save(info);
    } catch (error) {
      // The cache is an optimisation: failing to write it must not fail the request.
      this.#logger.warn({ err: error }, 'could not write the token cache file; continuing without it');
    }
    return info;
  }
}
