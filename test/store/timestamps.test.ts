import { describe, expect, it } from 'vitest';
import { canonicalTimestamp, parsePgTimestamp } from '../../src/store/timestamps.ts';
import { StoreError } from '../../src/errors.ts';
import { checkpoint, DIALECTS, fresh } from './harness.ts';

const C = 'cust-ts';

describe.each(DIALECTS)('timestamps on %s', (dialect) => {
  it('sort and filter correctly in SQL at millisecond precision, whatever offset they arrived with', async () => {
    const { store } = await fresh(dialect, 'ts');
    const arrived = [
      '2026-03-01T10:00:00.010Z', // exactly the upper bound: excluded
      '2026-03-01T05:00:00.002-05:00', // 10:00:00.002Z
      '2026-03-01T12:00:00+02:00', // 10:00:00.000Z, no milliseconds given
      '2026-03-01T09:59:59.999Z', // below the lower bound
      '2026-03-01T10:00:00.001Z',
      '2026-03-01T10:00:00.009+00:00',
    ];
    await store.commitPage({
      customerId: C, sink: 'occupancy', at: '2026-03-01T12:00:00.000Z', checkpoint: checkpoint(C, null),
      records: arrived.map((observedAt, i) => ({ floorSpaceId: `fs-${i}`, observedAt, occupancyStatus: 'OCCUPIED', headcount: 1, eventId: null })),
    });
    const rows = await store.query<{ observed_at: string }>(
      'SELECT observed_at FROM occupancy WHERE observed_at >= $1 AND observed_at < $2 ORDER BY observed_at',
      ['2026-03-01T10:00:00.000Z', '2026-03-01T10:00:00.010Z'],
    );
    expect(rows.map((r) => r.observed_at)).toEqual([
      '2026-03-01T10:00:00.000Z',
      '2026-03-01T10:00:00.001Z',
      '2026-03-01T10:00:00.002Z',
      '2026-03-01T10:00:00.009Z',
    ]);
    const [max] = await store.query<{ latest: string }>('SELECT max(observed_at) AS latest FROM occupancy');
    expect(max?.latest).toBe('2026-03-01T10:00:00.010Z');
  });

  it('come back as canonical ISO strings from every read, including Date parameters', async () => {
    const { store } = await fresh(dialect, 'tsread');
    await store.saveState({ ...checkpoint(C, '2026-03-01T10:00:00+00:00'), windowStart: '2026-03-01T09:00:00.000Z',
      windowEnd: '2026-03-01T10:00:00.000Z', rangeStart: '2026-02-01T00:00:00Z', rangeEnd: '2026-03-01T00:00:00.000Z' });
    const state = await store.getState(C, 'occupancy');
    expect(state).toMatchObject({ watermark: '2026-03-01T10:00:00.000Z', rangeStart: '2026-02-01T00:00:00.000Z' });
    const rows = await store.query('SELECT stream FROM sync_state WHERE watermark = $1', [new Date('2026-03-01T10:00:00.000Z')]);
    expect(rows).toEqual([{ stream: 'occupancy' }]);
  });
});

describe('timestamp conversion', () => {
  it('SQLite refuses any other text form with a CHECK constraint', async () => {
    const { store } = await fresh('sqlite', 'tscheck');
    await expect(
      store.query(
        "INSERT INTO sync_state (customer_id, stream, watermark, updated_at) VALUES ('c', 's', '2026-03-01 10:00:00', '2026-03-01T10:00:00.000Z')",
      ),
    ).rejects.toThrow(/sync_state_watermark_iso/);
    await expect(
      store.query("INSERT INTO occupancy_arrivals (source, arrived_at) VALUES ('poll', '2026-03-01T10:00:00Z')"),
    ).rejects.toThrow(/occupancy_arrivals_arrived_at_iso/);
  });
  it('keeps canonical values and normalises offsets, Dates and epoch ms', () => {
    expect(canonicalTimestamp('2026-03-01T10:00:00.000Z', 'f')).toBe('2026-03-01T10:00:00.000Z');
    expect(canonicalTimestamp('2026-03-01T11:30:00.5+01:30', 'f')).toBe('2026-03-01T10:00:00.500Z');
    expect(canonicalTimestamp(new Date(Date.UTC(2026, 2, 1)), 'f')).toBe('2026-03-01T00:00:00.000Z');
    expect(canonicalTimestamp(Date.UTC(2026, 2, 1), 'f')).toBe('2026-03-01T00:00:00.000Z');
  });

  it('refuses values without an offset or that are not times, naming the field', () => {
    expect(() => canonicalTimestamp('2026-03-01', 'watermark')).toThrow(StoreError);
    expect(() => canonicalTimestamp('2026-03-01T10:00:00', 'watermark')).toThrow(/watermark: .* has no UTC offset/);
    expect(() => canonicalTimestamp('not a time Z', 'observedAt')).toThrow(/observedAt: "not a time Z" is not a valid timestamp/);
    expect(() => canonicalTimestamp(null, 'observedAt')).toThrow(/expected an ISO 8601 timestamp, got null/);
  });

  it('refuses canonical-looking text with fields out of range instead of storing it as it came', () => {
    // The hot path matches the canonical shape without a Date: it must not let a month 13 or an hour 25 through.
    for (const bad of ['2026-13-01T00:00:00.000Z', '2026-00-10T00:00:00.000Z', '2026-01-01T25:00:00.000Z', '2026-01-32T00:00:00.000Z', '2026-01-01T10:60:00.000Z']) {
      expect(() => canonicalTimestamp(bad, 'observedAt'), bad).toThrow(/observedAt: .* is not a valid timestamp/);
    }
    // Day 29-31 go through Date, which knows each month's length.
    expect(canonicalTimestamp('2028-02-29T00:00:00.000Z', 'f')).toBe('2028-02-29T00:00:00.000Z');
    expect(canonicalTimestamp('2026-01-31T23:59:59.999Z', 'f')).toBe('2026-01-31T23:59:59.999Z');
  });

  it('reads Postgres timestamptz text in the canonical form', () => {
    expect(parsePgTimestamp('2026-03-01 10:00:00+00')).toBe('2026-03-01T10:00:00.000Z');
    expect(parsePgTimestamp('2026-03-01 10:00:00.12+00')).toBe('2026-03-01T10:00:00.120Z');
    expect(parsePgTimestamp('2026-03-01 10:00:00.123456+00')).toBe('2026-03-01T10:00:00.123Z');
    expect(parsePgTimestamp('2026-03-01 12:00:00.5+02')).toBe('2026-03-01T10:00:00.500Z');
    expect(parsePgTimestamp('infinity')).toBe('infinity');
  });
});
