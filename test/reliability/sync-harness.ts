import { createApiClient, type ApiStats } from '../../src/api/client.ts';
import { loadDocument } from '../../src/api/documents.ts';
import type { Clock } from '../../src/clock.ts';
import type { Config } from '../../src/config.ts';
import { silentLogger, type Logger } from '../../src/logger.ts';
import type { Sandbox } from '../../src/sandbox/index.ts';
import type { Store } from '../../src/store/types.ts';
import { runSync, type RunRequest, type SyncReport } from '../../src/sync/engine.ts';
import { engineSettings } from '../../src/app/engine-settings.ts';
import { streams } from '../../jobs/index.ts';
import { DAY, HOUR, MIN, againstTruth, dbRows, syncSettings, truthRows } from '../sync/helpers.ts';

export { DAY, HOUR, MIN, againstTruth, dbRows, syncSettings, truthRows };

export const FAST_HTTP: Config['http'] = { timeoutMs: 10_000, maxAttempts: 6, backoffMinMs: 10, backoffMaxMs: 50 };

export interface EngineRun {
  report: SyncReport;
  stats: ApiStats;
}

/** One engine run for every sandbox customer (read keys), keeping the clients' counters. */
export async function runEngine(input: {
  store: Store;
  sandbox: Sandbox;
  clock: Clock;
  http?: Partial<Config['http']>;
  settings?: Config['sync'];
  request?: RunRequest;
  logger?: Logger;
}): Promise<EngineRun> {
  const customer = input.sandbox.customers[0]!;
  const client = createApiClient({
    baseUrl: input.sandbox.url,
    apiKey: customer.readKey.key,
    apiSecret: customer.readKey.secret,
    clock: input.clock,
    http: { ...FAST_HTTP, ...input.http },
    logger: input.logger,
    // As `sync` builds its clients (src/app/clients.ts): a GraphQL error on a query page is retried as transient.
    retryGraphQLErrors: true,
  });
  try {
    const report = await runSync({
      store: input.store,
      clock: input.clock,
      logger: input.logger ?? silentLogger,
      settings: engineSettings({ sync: input.settings ?? syncSettings() }),
      streams,
      targets: [{ customerId: customer.id, client }],
      loadDocument,
      request: input.request,
    });
    return { report, stats: client.stats };
  } finally {
    await client.close();
  }
}

export const succeeded = (run: EngineRun) => run.report.outcomes.every((o) => o.status === 'succeeded');

/**
 * DB rows of the customer below the watermark equal the sandbox's ground truth from its start, and any at or after it
 * are the truth's too (againstTruth); returns the count below the watermark.
 */
export async function expectTruth(store: Store, sandbox: Sandbox, customerId: string, watermark: string, expect: (a: unknown, m?: string) => { toEqual(b: unknown): void }): Promise<number> {
  const held = againstTruth(await dbRows(store, customerId), sandbox, customerId, watermark, 0);
  expect(held.stored.length, 'row count').toEqual(held.truth.length);
  expect(held.stored).toEqual(held.truth);
  expect(held.strays, 'rows at or after the watermark that are not the truth').toEqual([]);
  return held.stored.length;
}
