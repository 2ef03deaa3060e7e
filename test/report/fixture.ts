import type { OccupancyRecord, Store } from '../../src/store/types.ts';

/**
 * The hand-computed reporting fixture (figures worked out in test/report/views.test.ts), written through the store
 * exactly as sync (commitPage, runs) and the webhook receiver (storeDelivery) write it.
 */

const reading = (floorSpaceId: string, observedAt: string, occupancyStatus: string, headcount: number, eventId: string | null = null): OccupancyRecord =>
  ({ floorSpaceId, observedAt, occupancyStatus, headcount, eventId });

const noWindow = { windowStart: null, windowEnd: null, pageCursor: null, rangeStart: null, rangeEnd: null };

export async function loadFixture(store: Store): Promise<void> {
  const run1 = await store.startRun({ customerId: 'c1', stateKey: 'occupancy', mode: 'incremental', startedAt: '2026-01-05T08:00:00.000Z' });
  await store.commitPage({
    customerId: 'c1',
    sink: 'occupancy',
    at: '2026-01-05T10:05:00.000Z',
    runId: run1,
    records: [
      reading('A', '2026-01-05T09:00:00.000Z', 'CurrentlyOccupied', 4, 'o1'),
      reading('A', '2026-01-05T09:20:00.000Z', 'CurrentlyOccupied', 2, 'o2'),
      reading('A', '2026-01-05T09:59:59.999Z', 'NotOccupied', 0, 'o3'),
      reading('A', '2026-01-05T10:00:00.000Z', 'CurrentlyOccupied', 7, 'o4'),
      reading('B', '2026-01-05T09:30:00.000Z', 'NotOccupied', 0, 'o5'),
    ],
    checkpoint: { customerId: 'c1', stateKey: 'occupancy', watermark: '2026-01-05T10:00:00.000Z', ...noWindow },
  });
  await store.finishRun(run1, { status: 'succeeded', finishedAt: '2026-01-05T08:01:00.000Z' });
  const run2 = await store.startRun({ customerId: 'c1', stateKey: 'occupancy', mode: 'incremental', startedAt: '2026-01-05T09:00:00.000Z' });
  await store.finishRun(run2, { status: 'failed', finishedAt: '2026-01-05T09:00:30.000Z', error: 'boom' });
  const run3 = await store.startRun({ customerId: 'c1', stateKey: 'buildings', mode: 'full', startedAt: '2026-01-05T09:05:00.000Z' });
  await store.finishRun(run3, { status: 'succeeded', finishedAt: '2026-01-05T09:06:00.000Z' });
  // The same floor space id under another customer must not mix with c1's.
  await store.commitPage({
    customerId: 'c2',
    sink: 'occupancy',
    at: '2026-01-05T09:15:00.000Z',
    records: [reading('A', '2026-01-05T09:10:00.000Z', 'CurrentlyOccupied', 10, 'o6')],
    checkpoint: { customerId: 'c2', stateKey: 'occupancy', watermark: '2026-01-05T09:00:00.000Z', ...noWindow },
  });
  await store.storeDelivery(
    { id: 'dlv-1', customerId: 'c1', type: 'Occupancy', createdAt: '2026-01-05T23:59:00.000Z', sentAt: '2026-01-05T23:59:01.000Z', receivedAt: '2026-01-05T23:59:02.000Z', body: '{}' },
    [reading('B', '2026-01-05T23:59:00.000Z', 'CurrentlyOccupied', 1, 'dlv-1')],
  );
}

