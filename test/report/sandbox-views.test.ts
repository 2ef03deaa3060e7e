import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.ts';
import { startSandbox, type ApiVariant, type Sandbox } from '../../src/sandbox/index.ts';
import type { Store } from '../../src/store/index.ts';
import { runMain } from '../support/cli.ts';
import { DIALECTS, freshDatabase, openTestStore, type TestDatabase } from '../support/databases.ts';
import { ROOT } from '../support/process.ts';
import { tempDir } from '../support/tmp.ts';
import { DAY, againstTruth, childEnv, dbRows } from '../sync/helpers.ts';
import { referenceFigures, type RefCalendar, type RefFigures, type RefReading } from '../store/aggregate-reference.ts';

/**
 * The time-weighted views against the sandbox's truth: interval sensors (the default API), presence-only and
 * change-only ones (docs/examples/api-presence and api-change, as a user adapts), in the sandbox's buildings of
 * several zones (London, New York, Kolkata with its half-hour offset...), synced by the CLI, and `space_hours` per
 * floor space, local date, local hour and working or not equal to a per-minute computation from the readings the
 * sandbox holds, with the hold documented for each sampling (interval: 15 minutes, change: 24 hours) and the default
 * working time (Monday to Friday 08:00-18:00 local). Exact: the sandbox's readings are on whole minutes.
 */

const MIN = 60_000;
const VARIANTS: Array<{ variant: ApiVariant; example?: string; maxHoldMs: number }> = [
  { variant: 'v1', maxHoldMs: 15 * MIN },
  { variant: 'presence', example: 'api-presence', maxHoldMs: 15 * MIN },
  { variant: 'change', example: 'api-change', maxHoldMs: 24 * 60 * MIN },
];

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** The sandbox's buildings, floors and floor spaces, stored as their listings store them. */
async function listHierarchy(store: Store, sandbox: Sandbox, customerId: string): Promise<void> {
  const checkpoint = { customerId, watermark: null, windowStart: null, windowEnd: null, pageCursor: null, rangeStart: null, rangeEnd: null };
  const at = new Date(Date.now() - 3 * DAY).toISOString();
  const pages = [
    ['buildings', sandbox.truth.buildings(customerId).map((b) => ({ id: b.id, name: b.name, timeZone: b.timeZone }))],
    ['floors', sandbox.truth.floors(customerId)],
    ['floorSpaces', sandbox.truth.floorSpaces(customerId)],
  ] as const;
  for (const [sink, records] of pages) await store.commitPage({ customerId, sink, records: records as never, at, checkpoint: { ...checkpoint, stateKey: `listing-${sink}` } });
}

async function spaceHours(store: Store): Promise<Map<string, RefFigures>> {
  const rows = await store.query<Record<string, unknown>>(
    'SELECT floor_space_id, local_date, local_hour, working, known_seconds, occupied_seconds, headcount_seconds, headcount_known_seconds, peak_headcount, readings FROM space_hours',
  );
  const out = new Map<string, RefFigures>();
  for (const r of rows) {
    const key = `${r.floor_space_id}|${r.local_date}|${Number(r.local_hour)}|${r.working === true || Number(r.working) === 1}`;
    expect(out.has(key), key).toBe(false);
    const ms = (v: unknown) => Math.round(Number(v) * 1000);
    out.set(key, {
      knownMs: ms(r.known_seconds),
      occupiedMs: ms(r.occupied_seconds),
      headcountMs: ms(r.headcount_seconds),
      headcountKnownMs: ms(r.headcount_known_seconds),
      peak: r.peak_headcount === null ? null : Number(r.peak_headcount),
      readings: Number(r.readings),
    });
  }
  return out;
}

describe.each(DIALECTS)('time-weighted views against the sandbox (%s)', (dialect) => {
  it.each(VARIANTS)('$variant sensors: space_hours equal a per-minute computation from the sandbox\'s readings, each building in its zone', { timeout: 60_000 }, async ({ variant, example, maxHoldMs }) => {
    const dataStart = Math.floor((Date.now() - DAY) / 300_000) * 300_000;
    const sandbox = await startSandbox({ apiVariant: variant, seed: 23, customers: 1, dataStart, lateArrivalMaxMs: 0 });
    cleanups.push(() => sandbox.close());
    const db: TestDatabase = await freshDatabase(dialect, `tw-sandbox-${variant}`);
    cleanups.push(() => db.drop());
    const customer = sandbox.customers[0]!.id;
    const extra: Record<string, string> = { LOG_LEVEL: 'silent', SYNC_INITIAL_HISTORY: '2d', SYNC_SETTLE_DELAY: '1s' };
    if (example) {
      const dir = tempDir('tw-sandbox-');
      cleanups.push(() => dir.remove());
      cpSync(join(ROOT, 'docs/examples', example), dir.dir, { recursive: true });
      extra.DEFINITIONS_FILE = dir.dir;
    }
    const env = childEnv(sandbox, db.url, extra);
    expect((await runMain(['migrate'], env)).code).toBe(ExitCode.OK);
    let store = await openTestStore(db);
    await listHierarchy(store, sandbox, customer);
    await store.close();

    const sync = await runMain(['sync', '--stream', 'occupancy'], env);
    expect(sync.stderr).toBe('');
    expect(sync.code).toBe(ExitCode.OK);

    store = await openTestStore(db);
    try {
      const mark = (await store.getState(customer, 'occupancy'))!.watermark!;
      const watermark = Date.parse(mark);
      const [calendar] = await store.query<{ m: unknown }>('SELECT max(max_hold_ms) AS m FROM aggregate_calendars');
      expect(Number(calendar!.m)).toBe(maxHoldMs);
      const zones = new Map(sandbox.truth.buildings(customer).map((b) => [b.id, b.timeZone]));
      expect(new Set(zones.values()).size).toBeGreaterThanOrEqual(3);
      const buildingOf = new Map(sandbox.truth.floorSpaces(customer).map((s) => [s.id, s.buildingId]));
      const calendarOf = (space: string): RefCalendar => ({ zone: zones.get(buildingOf.get(space)!)!, days: [1, 2, 3, 4, 5], start: 8 * 60, end: 18 * 60, holidays: [] });
      // The truth up to the watermark, and the readings the run stored at or after it (its last window may end past
      // the watermark: againstTruth), each checked to be the truth's.
      const rows = await dbRows(store, customer);
      const held = againstTruth(rows, sandbox, customer, mark, 0);
      expect(held.strays).toEqual([]);
      const past = new Set(rows.filter((r) => Date.parse(r.observedAt) >= watermark).map((r) => `${r.floorSpaceId}|${r.observedAt}`));
      const readings: RefReading[] = [...sandbox.truth.observations(customer, { to: Number.MAX_SAFE_INTEGER })]
        .filter((o) => Date.parse(o.created) < watermark || past.has(`${o.floorSpaceId}|${o.created}`))
        .map((o) => ({ space: o.floorSpaceId, at: Date.parse(o.created), status: o.occupancyStatus, headcount: o.headcount }));
      expect(readings.length).toBeGreaterThan(variant === 'change' ? 300 : 1000);
      if (variant === 'presence') expect(readings.every((r) => r.headcount === null)).toBe(true);
      const expected = referenceFigures(readings, calendarOf, maxHoldMs, dataStart - 60 * MIN, watermark + maxHoldMs + 60 * MIN);
      // 12 floor spaces over a day: hundreds of local hours, cut at 08:00 and 18:00 of each zone.
      expect(expected.size).toBeGreaterThan(200);
      const sorted = (m: Map<string, RefFigures>) => [...m.entries()].sort(([a], [b]) => (a < b ? -1 : 1));
      expect(sorted(await spaceHours(store))).toEqual(sorted(expected));
      // Presence-only: no average headcount anywhere, yet time used is known.
      if (variant === 'presence') {
        const [day] = await store.query<Record<string, unknown>>('SELECT MAX(avg_headcount) AS a, MAX(time_used) AS t FROM space_days');
        expect([day!.a, Number(day!.t) > 0]).toEqual([null, true]);
      }
    } finally {
      await store.close();
    }
  });
});
