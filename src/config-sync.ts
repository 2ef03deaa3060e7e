import type { Config, Env } from './config-types.ts';
import { duration, fail, integer, oneOf, retention, share, TIMER_MAX_MS } from './config-parse.ts';

/** Records per page unless SYNC_PAGE_SIZE (or a stream's `paging.pageSize`) says otherwise. */
const DEFAULT_PAGE_SIZE = 1000;

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

  return {
    lookbackMs: duration(env, 'SYNC_LOOKBACK', '15m'),
    settleDelayMs: duration(env, 'SYNC_SETTLE_DELAY', '60s'),
    stepMs: duration(env, 'SYNC_STEP', '1h', 60_000),
    pageSize,
    initialHistoryMs: duration(env, 'SYNC_INITIAL_HISTORY', '7d', 60_000),
    buildingsNameLike: env.BUILDINGS_NAME_LIKE?.trim() || undefined,
    cron,
    maxClockSkewMs: duration(env, 'SYNC_MAX_CLOCK_SKEW', '5m'),
    rejectedRecords: oneOf(env, 'SYNC_REJECTED_RECORDS', ['quarantine', 'fail'] as const, 'quarantine'),
    maxRejectedShare: share(env, 'SYNC_MAX_REJECTED_SHARE', 0.5),
    maxPagesPerWindow: integer(env, 'SYNC_MAX_PAGES_PER_WINDOW', 10_000, 1, 10_000_000),
    concurrency: integer(env, 'SYNC_CONCURRENCY', 4, 1, 256),
    queueConcurrency: integer(env, 'SYNC_CONCURRENCY', 32, 1, 256),
    windowConcurrency,
    maxPendingRecords,
    completenessMinShare: share(env, 'COMPLETENESS_MIN_SHARE', 0.5),
    completenessWindowMs: duration(env, 'COMPLETENESS_WINDOW', '1h', 60_000),
    runHistoryRetentionMs: retention(env, 'RUN_HISTORY_RETENTION', '28d'),
    readingsRetentionMs: retention(env, 'READINGS_RETENTION', 'off'),
  };
}

/** HTTP_TIMEOUT, HTTP_MAX_ATTEMPTS and the backoff bounds of the API client. */
export function resolveHttp(env: Env): Config['http'] {
  const http = {
    timeoutMs: duration(env, 'HTTP_TIMEOUT', '30s', 100, TIMER_MAX_MS),
    maxAttempts: integer(env, 'HTTP_MAX_ATTEMPTS', 6, 1, 50),
    backoffMinMs: duration(env, 'HTTP_BACKOFF_MIN', '500ms', 0, TIMER_MAX_MS),
    backoffMaxMs: duration(env, 'HTTP_BACKOFF_MAX', '30s', 0, TIMER_MAX_MS),
  };
  if (http.backoffMaxMs < http.backoffMinMs) {
    fail('HTTP_BACKOFF_MAX', env.HTTP_BACKOFF_MAX, 'smaller than HTTP_BACKOFF_MIN', 'make HTTP_BACKOFF_MAX at least HTTP_BACKOFF_MIN');
  }
  return http;
}
