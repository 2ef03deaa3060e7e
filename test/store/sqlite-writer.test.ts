import { describe, expect, it } from 'vitest';
import { checkpoint, fresh, readings } from './harness.ts';

/**
 * SQLite bulk pages move to a writer thread once a process has written a few thousand rows (src/store/sqlite.ts,
 * sqlite-writer.ts): pages on both sides of that point land the same way, and a page that fails on the writer
 * thread leaves nothing behind (rows, checkpoint), exactly as on the main connection.
 */

const C = 'cust-w';

describe('SQLite pages on the writer thread', () => {
  it('commit pages atomically with their checkpoint before and after the move to the writer thread', async () => {
    const { store } = await fresh('sqlite', 'writer');
    // 1,500 rows per page: the first page is written on the main connection, the next ones on the writer thread.
    for (let p = 0; p < 3; p++) {
      const records = readings(1_500, new Date(Date.parse('2026-03-01T00:00:00.000Z') + p * 1_500 * 60_000).toISOString(), `fs-${p}`);
      await store.commitPage({ customerId: C, sink: 'occupancy', records, at: '2026-03-02T00:00:00.000Z', checkpoint: checkpoint(C, null, `page-${p}`) });
    }
    const [{ n }] = (await store.query<{ n: number }>('SELECT count(*) AS n FROM occupancy WHERE customer_id = $1', [C])) as [{ n: number }];
    expect(n).toBe(4_500);
    expect((await store.getState(C, 'occupancy'))?.pageCursor).toBe('page-2');

    // A page whose last record breaks a CHECK: nothing of it stays, and the checkpoint is the previous page's.
    const bad = readings(1_500, '2026-04-01T00:00:00.000Z', 'fs-bad');
    bad[1_499]!.headcount = -1;
    await expect(
      store.commitPage({ customerId: C, sink: 'occupancy', records: bad, at: '2026-04-02T00:00:00.000Z', checkpoint: checkpoint(C, null, 'page-bad') }),
    ).rejects.toThrow(/occupancy_readings_headcount_non_negative/);
    const [{ n: after }] = (await store.query<{ n: number }>('SELECT count(*) AS n FROM occupancy WHERE customer_id = $1', [C])) as [{ n: number }];
    expect(after).toBe(4_500);
    expect((await store.getState(C, 'occupancy'))?.pageCursor).toBe('page-2');
    // No floor space key of the rolled-back page is remembered: the next page with that floor space is stored.
    bad[1_499]!.headcount = 1;
    await store.commitPage({ customerId: C, sink: 'occupancy', records: bad, at: '2026-04-02T00:00:00.000Z', checkpoint: checkpoint(C, null, 'page-3') });
    const rows = await store.query<{ floor_space_id: string; headcount: number }>(
      "SELECT floor_space_id, headcount FROM occupancy WHERE customer_id = $1 AND floor_space_id = 'fs-bad' ORDER BY observed_at DESC LIMIT 1",
      [C],
    );
    expect(rows).toEqual([{ floor_space_id: 'fs-bad', headcount: 1 }]);
  });

  it('commits pages together on the writer thread: all of them or none', async () => {
    const { store } = await fresh('sqlite', 'writer-together');
    const page = (p: number, tail?: number) => {
      const records = readings(1_500, new Date(Date.parse('2026-03-01T00:00:00.000Z') + p * 1_500 * 60_000).toISOString(), `fs-${p}`);
      if (tail !== undefined) records[1_499]!.headcount = tail;
      return { customerId: C, sink: 'occupancy' as const, records, at: '2026-03-02T00:00:00.000Z', checkpoint: checkpoint(C, null, `page-${p}`) };
    };
    const count = async () => ((await store.query<{ n: number }>('SELECT count(*) AS n FROM occupancy WHERE customer_id = $1', [C])) as [{ n: number }])[0].n;
    // 4,500 rows: past the move to the writer thread.
    await store.commitPages([page(0), page(1), page(2)]);
    expect(await count()).toBe(4_500);
    expect((await store.getState(C, 'occupancy'))?.pageCursor).toBe('page-2');
    // The second of two pages breaks a CHECK with its last record: neither stays, the checkpoint is the one before.
    await expect(store.commitPages([page(3), page(4, -1)])).rejects.toThrow(/occupancy_readings_headcount_non_negative/);
    expect(await count()).toBe(4_500);
    expect((await store.getState(C, 'occupancy'))?.pageCursor).toBe('page-2');
    await store.commitPages([page(3), page(4)]);
    expect(await count()).toBe(7_500);
    expect((await store.getState(C, 'occupancy'))?.pageCursor).toBe('page-4');
  });
});
