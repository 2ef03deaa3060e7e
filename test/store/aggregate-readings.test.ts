import { describe, expect, it } from 'vitest';
import { PG_EPOCH_MS, readingsOf } from '../../src/store/aggregates.ts';
import { StoreError } from '../../src/errors.ts';
import { NO_HEADCOUNT, OCCUPIED, UNKNOWN, VACANT, type ReadingColumns } from '../../src/time-weight.ts';
import { migratedStore } from '../support/databases.ts';

// Postgres sends a floor space's readings as lists (aggregates.ts readReadings); these are what the buckets are computed from.
describe('readingsOf', () => {
  const occupied = new Map<number, boolean | null>([
    [1, true],
    [2, false],
    [3, null],
  ]);

  const rows = (c: ReadingColumns) => Array.from(c.at, (at, i) => ({ at, state: c.state[i], headcount: c.headcount[i] }));

  it('reads instants, statuses and headcounts, an empty headcount as none and an unknown code as unknown', () => {
    expect(rows(readingsOf('1000,2000,3000', '1,2,9', '4,,0', occupied))).toEqual([
      { at: 1000, state: OCCUPIED, headcount: 4 },
      { at: 2000, state: VACANT, headcount: NO_HEADCOUNT },
      { at: 3000, state: UNKNOWN, headcount: 0 },
    ]);
    expect(rows(readingsOf('1772434800000', '2', '', occupied))).toEqual([{ at: 1772434800000, state: VACANT, headcount: NO_HEADCOUNT }]);
  });

  it('puts lists that arrive out of time order back in order, each reading with its own status and headcount', () => {
    expect(rows(readingsOf('3000,1000,2000', '3,1,2', ',5,6', occupied))).toEqual([
      { at: 1000, state: OCCUPIED, headcount: 5 },
      { at: 2000, state: VACANT, headcount: 6 },
      { at: 3000, state: UNKNOWN, headcount: NO_HEADCOUNT },
    ]);
  });

  it('reads an instant before 1970, and a value printed otherwise (a real, an exponent) as Number does', () => {
    expect(rows(readingsOf('-1000,2000.0,3e3', '1,1,1', '1,2.0,3', occupied)).map((r) => [r.at, r.headcount])).toEqual([
      [-1000, 1],
      [2000, 2],
      [3000, 3],
    ]);
  });

  it('refuses a value that is no number, and lists of different lengths, naming what it read', () => {
    expect(() => readingsOf('1000,x', '1,1', '1,1', occupied)).toThrow(/read gave "x" as an instant/);
    expect(() => readingsOf('1000,-', '1,1', '1,1', occupied)).toThrow(StoreError);
    expect(() => readingsOf('1000,2000', '1', '1,1', occupied)).toThrow(/2 instants, 1 status codes and 2 headcounts/);
  });
});

// The instants Postgres sends are computed in float8 (aggregates.ts PG_EPOCH_MS): exact for every millisecond instant.
describe('a reading instant in epoch milliseconds, read back from Postgres', () => {
  it('equals Date.parse for the edges of the years 1 to 9999, both sides of 1970 and 200,000 random instants', async () => {
    const { store, drop } = await migratedStore('postgres', 'epoch_ms');
    try {
      const edges = ['0001-01-01T00:00:00.000Z', '0001-01-01T00:00:00.001Z', '1969-12-31T23:59:59.999Z', '1970-01-01T00:00:00.000Z', '1970-01-01T00:00:00.001Z',
        '2026-03-29T00:59:59.999Z', '2026-10-25T01:00:00.001Z', '9999-12-31T23:59:59.999Z'];
      const lo = Date.parse(edges[0]!);
      const hi = Date.parse(edges[edges.length - 1]!);
      let seed = 40;
      const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648);
      const instants = [...edges, ...Array.from({ length: 200_000 }, () => new Date(lo + Math.floor(random() * random() * (hi - lo))).toISOString())];
      const rows = await store.query<{ ms: number | string }>(`SELECT ${PG_EPOCH_MS} AS ms FROM unnest($1::timestamptz[]) WITH ORDINALITY AS r(observed_at, n) ORDER BY n`, [instants]);
      const wrong = instants.filter((iso, i) => Number(rows[i]?.ms) !== Date.parse(iso));
      expect(rows).toHaveLength(instants.length);
      expect(wrong).toEqual([]);
    } finally {
      await store.close();
      await drop();
    }
  });
});
