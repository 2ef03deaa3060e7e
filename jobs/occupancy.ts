import { fileURLToPath } from 'node:url';
import { defineStream } from '../src/sync/stream.ts';

/** Observations by their `created` time, in windows from the watermark (minus the lookback) to now - settle delay. */
export const occupancy = defineStream({
  name: 'occupancy',
  document: fileURLToPath(new URL('./occupancy.graphql', import.meta.url)),
  sink: 'occupancy',
  kind: 'incremental-window',
  paging: { style: 'relay', connection: ['occupancy'], pageSizeVar: 'first', cursorVar: 'after' },
  variables: ({ window }) => ({ from: window!.from, to: window!.to }),
  record: {
    floorSpaceId: { path: 'floorSpaceId', type: 'id' },
    observedAt: { path: 'created', type: 'timestamp' },
    occupancyStatus: { path: 'occupancyStatus', type: 'text' },
    headcount: { path: 'headcount', type: 'count' },
    eventId: { path: 'id', type: 'id', nullable: true },
  },
  cursorField: 'observedAt',
});
