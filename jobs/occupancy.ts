import { fileURLToPath } from 'node:url';
import { apiTimestamp, defineStream } from '../src/sync/stream.ts';

interface OccupancyNode {
  id: string;
  floorSpaceId: string;
  occupancyStatus: string;
  headcount: number;
  created: string;
}

/** Observations by their `created` time, in windows from the watermark (minus the lookback) to now - settle delay. */
export const occupancy = defineStream<'occupancy', OccupancyNode>({
  name: 'occupancy',
  document: fileURLToPath(new URL('./occupancy.graphql', import.meta.url)),
  sink: 'occupancy',
  kind: 'incremental-window',
  paging: { style: 'relay', connection: ['occupancy'], pageSizeVar: 'first', cursorVar: 'after' },
  variables: ({ window }) => ({ from: window!.from, to: window!.to }),
  map: (node) => ({
    floorSpaceId: String(node.floorSpaceId),
    observedAt: apiTimestamp(node.created, 'occupancy.nodes.created'),
    occupancyStatus: String(node.occupancyStatus),
    headcount: Number(node.headcount),
    eventId: node.id == null ? null : String(node.id),
  }),
  keyFields: ['floorSpaceId', 'observedAt'],
  cursorField: 'observedAt',
});
