import type { Config, Env } from './config-types.ts';
import { ceiling, duration, fail, integer, oneOf, retention, share, TIMER_CEILING } from './config-parse.ts';

/** Records per page unless SYNC_PAGE_SIZE (or a stream's `paging.pageSize`) says otherwise. */
const DEFAULT_PAGE_SIZE = 1000;

/**
 * What each window setting may be at most, from what it means (docs/sync.md, "Window semantics"). Past these a value
 * is no longer a tuning but a run that does nothing (a settle delay) or re-reads far more than it stores (a lookback,
 * a trusted clock skew) on every run. SYNC_INITIAL_HISTORY keeps the span's ceiling: it is read once, as a backfill is.
 */
export const SYNC_CEILINGS = {
  lookback: ceiling('7d', 'every run re-reads it', 're-read an older range once with `occupancy-sync backfill` or `state rewind`, and keep the lookback to what arrives late (default 15m; days for gateways that upload after being offline)'),
  settleDelay: ceiling('1h', 'no run reads closer to now than this, so the copy is always that far behind', 'use e.g. 60s (the default) or 5m; rows that arrive later are read again through SYNC_LOOKBACK'),
  step: ceiling('7d', 'a window is what a run checkpoints and reads in parallel, in at most SYNC_MAX_PAGES_PER_WINDOW pages', 'use e.g. 1h (the default) or 1d'),
  maxClockSkew: ceiling('2d', 'a Date header further off is a broken clock, and while it is trusted it holds the watermark back as far, re-read by every run', 'use e.g. 5m (the default) or 1h, and fix the clock that is off (NTP)'),
  completenessWindow: ceiling('1d', 'it is compared with the same window a day earlier, which a longer one would overlap', 'use e.g. 1h (the default) or 6h'),
};

/** The runs' settings (SYNC_*, COMPLETENESS_*, RUN_HISTORY_RETENTION, READINGS_RETENTION, BUILDINGS_NAME_LIKE). */
export function resolveSync(env: Env): Config['sync'] {
  const cron = env.SYNC_CRON?.trim() || '*/5 * * * *';

  const pageSize = integer(env, 'SYNC_PAGE_SIZE', DEFAULT_PAGE_SIZE, 1, 5000);
  const windowConcurrency = integer(env, 'SYNC_WINDOW_CONCURRENCY', 8, 1, 64);
  // Two pages per window (one committing, the next in flight) at the default page size; never below two pages of the
  // configured size, so a larger SYNC_PAGE_SIZE alone still keeps a page in flight while one commits.
  const maxPendingRecords = integer(env, 'SYNC_MAX_PENDING_RECORDS', Math.max(2 * DEFAULT_PAGE_SIZE * windowConcurrency, 2 * pageSize), 1, 100_000_000);
  if (maxPendingRecords < pageSize) {
    fail('SYNC_MAX_PENDING_RECORDS', env.SYNC_MAX_PENDING_RECORDS, `below SYNC_PAGE_SIZE=${pageSize}: not even one page would fit`, `set it to at least ${pageSize} (twice that keeps a page in flight while one commits), or unset it`);
  }

  const settleDelayMs = duration(env, 'SYNC_SETTLE_DELAY', '60s', 0, SYNC_CEILINGS.settleDelay);
  const initialHistoryMs = duration(env, 'SYNC_INITIAL_HISTORY', '7d', 60_000);
  // A first run reads [now - initial history, now - settle delay): empty, it stores nothing and sets no watermark,
  // so every later run would be a first run too. The variable set is the one named.
  if (settleDelayMs >= initialHistoryMs) {
    if (env.SYNC_SETTLE_DELAY?.trim()) {
      fail('SYNC_SETTLE_DELAY', env.SYNC_SETTLE_DELAY, `not below SYNC_INITIAL_HISTORY=${env.SYNC_INITIAL_HISTORY?.trim() || '7d'}: a first run would read nothing`, 'make SYNC_SETTLE_DELAY shorter than SYNC_INITIAL_HISTORY');
    }
    fail('SYNC_INITIAL_HISTORY', env.SYNC_INITIAL_HISTORY, 'not longer than SYNC_SETTLE_DELAY (60s by default): a first run would read nothing', 'make SYNC_INITIAL_HISTORY longer than SYNC_SETTLE_DELAY, e.g. 1h');
  }

  return {
    lookbackMs: duration(env, 'SYNC_LOOKBACK', '15m', 0, SYNC_CEILINGS.lookback),
    settleDelayMs,
    stepMs: duration(env, 'SYNC_STEP', '1h', 60_000, SYNC_CEILINGS.step),
    pageSize,
    initialHistoryMs,
    buildingsNameLike: env.BUILDINGS_NAME_LIKE?.trim() || undefined,
    cron,
    maxClockSkewMs: duration(env, 'SYNC_MAX_CLOCK_SKEW', '5m', 0, SYNC_CEILINGS.maxClockSkew),
    rejectedRecords: oneOf(env, 'SYNC_REJECTED_RECORDS', ['quarantine', 'fail'] as const, 'quarantine'),
    maxRejectedShare: share(env, 'SYNC_MAX_REJECTED_SHARE', 0.5),
    maxPagesPerWindow: integer(env, 'SYNC_MAX_PAGES_PER_WINDOW', 10_000, 1, 10_000_000),
    concurrency: integer(env, 'SYNC_CONCURRENCY', 4, 1, 256),
    queueConcurrency: integer(env, 'SYNC_CONCURRENCY', 32, 1, 256),
    windowConcurrency,
    maxPendingRecords,
    completenessMinShare: share(env, 'COMPLETENESS_MIN_SHARE', 0.5),
    completenessWindowMs: duration(env, 'COMPLETENESS_WINDOW', '1h', 60_000, SYNC_CEILINGS.completenessWindow),
    runHistoryRetentionMs: retention(env, 'RUN_HISTORY_RETENTION', '28d'),
    readingsRetentionMs: retention(env, 'READINGS_RETENTION', 'off'),
  };
}

/** HTTP_TIMEOUT, HTTP_MAX_ATTEMPTS and the backoff bounds of the API client. */
export function resolveHttp(env: Env): Config['http'] {
  const http = {
    timeoutMs: duration(env, 'HTTP_TIMEOUT', '30s', 100, TIMER_CEILING),
    maxAttempts: integer(env, 'HTTP_MAX_ATTEMPTS', 6, 1, 50),
    backoffMinMs: duration(env, 'HTTP_BACKOFF_MIN', '500ms', 0, TIMER_CEILING),
    backoffMaxMs: duration(env, 'HTTP_BACKOFF_MAX', '30s', 0, TIMER_CEILING),
  };
  if (http.backoffMaxMs < http.backoffMinMs) {
    fail('HTTP_BACKOFF_MAX', env.HTTP_BACKOFF_MAX, 'smaller than HTTP_BACKOFF_MIN', 'make HTTP_BACKOFF_MAX at least HTTP_BACKOFF_MIN');
  }
  return http;
}
