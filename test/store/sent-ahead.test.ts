import { describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/index.ts';
import { checkpoint, DIALECTS, fresh, readings } from './harness.ts';

/**
 * A page's statements after its rows (its invalidations, its checkpoint, its run's counters) are sent ahead of their
 * answers (Executor.runAhead): on SQLite's writer thread and on a Postgres connection. Their checks still fail the
 * page: a watermark moved backwards or a run that does not exist is refused with its own line, a failed upsert is
 * reported as itself (not as what came after it in the aborted transaction), and nothing of a refused page stays.
 */

const C = 'cust-ahead';
const W1 = '2026-03-02T00:00:00.000Z';
/** More rows than SQLite writes on its main connection: every page here goes to the writer thread. */
const ROWS = 2_500;

const page = (store: Store, day: number, options: { watermark?: string; runId?: number; cursor?: string } = {}) => {
  const records = readings(ROWS, `2026-03-0${day}T00:00:00.000Z`, `fs-${day}`);
  return { records, commit: () => store.commitPage({ customerId: C, sink: 'occupancy', records, at: '2026-03-09T00:00:00.000Z', runId: options.runId, checkpoint: checkpoint(C, options.watermark ?? W1, options.cursor ?? `day-${day}`) }) };
};

async function stored(store: Store) {
  const [readingsCount] = await store.query<{ n: number | string }>('SELECT count(*) AS n FROM occupancy_readings');
  const [pages] = await store.query<{ n: number | string }>('SELECT count(*) AS n FROM aggregate_page_invalidations');
  const runs = await store.query<{ pages: number | string; records: number | string }>('SELECT pages, records FROM sync_runs');
  const state = await store.getState(C, 'occupancy');
  return { readings: Number(readingsCount!.n), invalidationPages: Number(pages!.n), runs: runs.map((r) => [Number(r.pages), Number(r.records)]), cursor: state?.pageCursor, watermark: state?.watermark };
}

describe.each(DIALECTS)('statements sent ahead on %s', (dialect) => {
  it("refuse a page by each one's own check, report a failed upsert as itself, and keep nothing of a refused page", async () => {
    const { store } = await fresh(dialect, 'ahead');
    const runId = await store.startRun({ customerId: C, stateKey: 'occupancy', mode: 'incremental', startedAt: '2026-03-09T00:00:00.000Z' });
    await page(store, 1, { runId }).commit();
    const before = await stored(store);
    expect(before).toEqual({ readings: ROWS, invalidationPages: 1, runs: [[1, ROWS]], cursor: 'day-1', watermark: W1 });

    // The checkpoint's check reads the stored watermark for its line, after the statements sent behind it.
    await expect(page(store, 2, { runId, watermark: '2026-03-01T00:00:00.000Z' }).commit()).rejects.toThrow(
      `refusing to move the watermark of ${C}/occupancy backwards from ${W1} to 2026-03-01T00:00:00.000Z`,
    );
    expect(await stored(store)).toEqual(before);

    await expect(page(store, 3, { runId: runId + 1000 }).commit()).rejects.toThrow(`run ${runId + 1000} does not exist`);
    expect(await stored(store)).toEqual(before);

    // The upsert fails first: its constraint is the error, not the watermark refused or an aborted transaction.
    const bad = page(store, 4, { runId, watermark: '2026-03-01T00:00:00.000Z' });
    bad.records[0]!.headcount = -1;
    await expect(bad.commit()).rejects.toThrow(/occupancy_readings_headcount_non_negative/);
    expect(await stored(store)).toEqual(before);

    // The connection (the writer thread) is left usable: the next page commits whole.
    await page(store, 5, { runId }).commit();
    expect(await stored(store)).toEqual({ readings: 2 * ROWS, invalidationPages: 2, runs: [[2, 2 * ROWS]], cursor: 'day-5', watermark: W1 });
  });
});
