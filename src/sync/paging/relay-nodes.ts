import { relayStyle } from './relay.ts';
import type { StyleModule } from './style.ts';

/**
 * A Relay connection read through `nodes`: `paging: { style: relay-nodes, connection: occupancy, variables: { pageSize:
 * first, cursor: after } }` reads `occupancy { nodes { ... } pageInfo { hasNextPage endCursor } }`.
 */
export const relayNodes: StyleModule = {
  name: 'relay-nodes',
  keys: ['connection', 'pageSize', 'maxPageSize'],
  required: ['connection'],
  roles: ['pageSize', 'cursor'],
  parse: (input) => relayStyle(input, 'nodes'),
};
