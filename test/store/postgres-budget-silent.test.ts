import { describe, expect, it } from 'vitest';
import type { LimitPolicy, StoredLimit } from '../../src/budget-store.ts';
import { StoreError } from '../../src/errors.ts';
import { memoryLogger } from '../../src/logger.ts';
import { PgBudgetRows } from '../../src/store/postgres/api-budget.ts';
import { freshDatabase, PG_BASE_URL, requirePostgres } from '../support/databases.ts';
import { tcpProxy } from './tcp-proxy.ts';

/**
 * The API budget's connection is one of the several a run holds to Postgres; when the path goes silent, whichever
 * notices first fails the run. Its line is the store's (postgres/watch.ts): where the database is, that nothing
 * committed is lost, the fix; one wording, whichever connection it was (the black-hole sync saw both).
 */
describe('the API budget on a Postgres that goes silent', () => {
  it("a statement on the budget's connection with no answer fails with the store's line: the database named, the next run resumes, the fix", async (context) => {
    await requirePostgres();
    const db = await freshDatabase('postgres', 'budget_silent');
    context.onTestFinished(() => db.drop());
    const target = new URL(PG_BASE_URL);
    const proxy = await tcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    context.onTestFinished(() => proxy.close());
    // Only `use` is exercised: the take statement's policy is never asked.
    const policy = {} as LimitPolicy<StoredLimit>;
    const rows = new PgBudgetRows({ databaseUrl: db.url.replace(`${target.host}/`, `127.0.0.1:${proxy.port}/`), policy, maxInFlight: 4, adaptive: false, logger: memoryLogger().logger });
    context.onTestFinished(() => rows.close());
    expect(await rows.use(async (sql) => (await sql.unsafe<Array<{ n: number }>>('SELECT 1 AS n'))[0]!.n)).toBe(1);
    const generation = rows.generation;

    proxy.blackhole();
    const error = await rows.use((sql) => sql.unsafe('SELECT 1 AS n')).then(
      () => undefined,
      (e: unknown) => e,
    );

    expect(error).toBeInstanceOf(StoreError);
    expect((error as Error).message).toMatch(
      /^no answer from Postgres at postgres:\/\/postgres@127\.0\.0\.1:\d+\/test.* for 10 s while sharing the API budget: the server or the network path to it is gone, so the connection was dropped \(and the slots it held with it\); what was not committed is not stored, and the next run resumes from the last committed page\. Fix: check that the server is up and reachable from here$/,
    );
    // The slots went with the dropped session: none taken on it is counted as held any more.
    expect(rows.generation).toBeGreaterThan(generation);
  }, 40_000);
});
