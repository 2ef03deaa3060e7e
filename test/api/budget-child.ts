import { systemClock } from '../../src/clock.ts';
import { SecretRegistry, createLogger } from '../../src/logger.ts';
import { defaultSleep } from '../../src/api/abort.ts';
import { createApiClient } from '../../src/api/client.ts';
import { limitPolicy, SharedBudgetBackend } from '../../src/api/budget/shared-backend.ts';
import { DEFAULT_BUDGET, type BudgetBackend } from '../../src/api/budget/types.ts';
import { openBudgetRows } from '../../src/store/api-budget.ts';
import { runPool } from '../support/pool.ts';
import { BUILDINGS } from './support.ts';

/**
 * One process of test/api/budget-shared.test.ts: a client of the shared key, drawing on the key's budget in Postgres
 * or in the SQLite coordinator file (the store's openBudgetRows, as src/app/clients.ts opens it), sending `requests` queries `concurrency` at a time (variables carry `tag`, so the
 * test's platform can tell the processes apart). Prints `ready`, then `done <stats>`.
 */

interface Job {
  backend: 'postgres' | 'sqlite';
  /** Postgres: DATABASE_URL (with its ?schema=); SQLite: the database file the coordinator file is beside. */
  url?: string;
  database?: string;
  platform: string;
  tag: string;
  requests: number;
  concurrency: number;
  adaptive: boolean;
  maxInFlight: number;
}

const job = JSON.parse(process.argv[2]!) as Job;
const settings = { ...DEFAULT_BUDGET, adaptive: job.adaptive, maxInFlight: job.maxInFlight };
// The budget's own lines (limit changes, pauses) on stderr, for a failing test to show.
const logger = createLogger({ level: 'info', pretty: false });
const common = { settings, clock: systemClock, sleep: defaultSleep, logger, maxPauseMs: 120_000 };
const database =
  job.backend === 'postgres'
    ? { dialect: 'postgres' as const, url: job.url!, sqlitePath: undefined }
    : { dialect: 'sqlite' as const, url: `file:${job.database!}`, sqlitePath: job.database! };
const rows = openBudgetRows(database, { policy: limitPolicy(settings, systemClock), maxInFlight: settings.maxInFlight, adaptive: settings.adaptive, logger, leaseMs: 60_000 });
const backend: BudgetBackend = new SharedBudgetBackend({ ...common, rows: rows! });
const client = createApiClient({
  baseUrl: job.platform,
  apiKey: 'shared-key',
  apiSecret: 'secret-abcdefgh',
  secrets: new SecretRegistry(),
  logger: createLogger({ level: 'error', pretty: false }),
  budget: backend.budget(job.platform, 'shared-key'),
  // Refused queries wait their Retry-After of one second for real; no more than that.
  http: { maxAttempts: 20, backoffMinMs: 10, backoffMaxMs: 50 },
});
console.log('ready');
await runPool(job.requests, job.concurrency, () => client.request(BUILDINGS, { nameLike: job.tag }));
console.log(`done ${JSON.stringify(client.stats)}`);
await client.close();
await backend.close();
