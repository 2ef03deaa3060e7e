import { afterEach, describe, expect, it } from 'vitest';
import { checkCompleteness, judgeCompleteness } from '../../src/app/completeness.ts';
import { allStreams } from '../../src/app/streams.ts';
import { buildStatus, formatStatus, withCompleteness } from '../../src/cli/status.ts';
import type { OccupancyRecord, Store } from '../../src/store/types.ts';
import { createMetrics } from '../../src/metrics.ts';
import { toIsoUtc } from '../../src/time.ts';
import { freshDatabase, openTestStore, type TestDatabase } from '../support/databases.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const W = Date.parse('2026-03-20T12:00:00.000Z');

describe('the completeness verdict', () => {
  it('is empty for none at all, low under the share, ok otherwise, unknown without a real baseline', () => {
    expect(judgeCompleteness(0, [12, 12], 0.5)).toEqual({ status: 'empty', ratio: 0 });
    expect(judgeCompleteness(3, [12, 0], 0.5)).toEqual({ status: 'low', ratio: 0.25 });
    expect(judgeCompleteness(6, [12, 4], 0.5)).toEqual({ status: 'ok', ratio: 0.5 });
    expect(judgeCompleteness(0, [9, 0], 0.5)).toEqual({ status: 'unknown', ratio: null });
    expect(judgeCompleteness(0, [], 0.5)).toEqual({ status: 'unknown', ratio: null });
  });
});

let db: TestDatabase | undefined;
let store: Store | undefined;
afterEach(async () => {
  await store?.close();
  await db?.drop();
  db = store = undefined;
});

/** `n` readings of one floor space, every 5 minutes back from `end`. */
function readings(end: number, n: number): OccupancyRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    floorSpaceId: 'f1',
    observedAt: toIsoUtc(end - (i + 1) * 5 * MINUTE),
    occupancyStatus: 'CurrentlyOccupied',
    headcount: 1,
    eventId: null,
  }));
}

async function customerWith(customerId: string, counts: { now: number; day: number; week: number }): Promise<void> {
  const records = [...readings(W, counts.now), ...readings(W - DAY, counts.day), ...readings(W - 7 * DAY, counts.week)];
  const checkpoint = { customerId, stateKey: 'occupancy', watermark: toIsoUtc(W), windowStart: null, windowEnd: null, pageCursor: null, rangeStart: null, rangeEnd: null };
  await store!.commitPage({ customerId, sink: 'occupancy', records, at: toIsoUtc(W), checkpoint });
}

describe.each(['sqlite', 'postgres'] as const)('the completeness alarm (%s)', (dialect) => {
  it('flags a stream whose last window holds none, or far fewer, records than a day or a week earlier', async () => {
    db = await freshDatabase(dialect, 'complete');
    store = await openTestStore(db);
    await customerWith('a-complete', { now: 12, day: 12, week: 12 });
    await customerWith('b-empty', { now: 0, day: 12, week: 12 });
    await customerWith('c-low', { now: 3, day: 12, week: 0 });
    await customerWith('d-new', { now: 12, day: 0, week: 0 });
    const findings = await checkCompleteness(store, allStreams, { minShare: 0.5, windowMs: HOUR });
    expect(findings.map((f) => [f.customerId, f.stream, f.status, f.current, f.dayBefore, f.weekBefore])).toEqual([
      ['a-complete', 'occupancy', 'ok', 12, 12, 12],
      ['b-empty', 'occupancy', 'empty', 0, 12, 12],
      ['c-low', 'occupancy', 'low', 3, 12, 0],
      ['d-new', 'occupancy', 'unknown', 12, 0, 0],
    ]);
    expect(findings[0]!.window).toEqual({ from: '2026-03-20T11:00:00.000Z', to: '2026-03-20T12:00:00.000Z' });

    // status shows the two that need a look, with the numbers and the setting.
    const text = formatStatus(withCompleteness(buildStatus(await store.listStates(), [], W), findings));
    const section = text.slice(text.indexOf('Far fewer records than before:'));
    expect(section.split('\n').filter((l) => l.startsWith('  '))).toEqual([
      expect.stringMatching(/^ {2}b-empty occupancy: 0 records in \[2026-03-20T11:00:00\.000Z, 2026-03-20T12:00:00\.000Z\) against 12 .*\(none at all\).*COMPLETENESS_MIN_SHARE/),
      expect.stringMatching(/^ {2}c-low occupancy: 3 records .* against 12 .*\(25 %\)/),
    ]);
    // /metrics: the lowest ratio per stream and how many streams are flagged.
    const metrics = createMetrics({ processMetrics: false });
    metrics.observeDataChecks({ completeness: findings, reconciliation: [] });
    const scraped = await metrics.text();
    expect(scraped).toContain('occupancy_sync_completeness_ratio{stream="occupancy"} 0\n');
    expect(scraped).toContain('occupancy_sync_streams_incomplete{stream="occupancy"} 2\n');
    // Off: no findings at all.
    expect(await checkCompleteness(store, allStreams, { minShare: 0, windowMs: HOUR })).toEqual([]);
  });
});
