import { RELAY_ROLES, relayStyle } from './relay.ts';
import { defineStyle } from './style.ts';

/**
 * A Relay connection read through `nodes`: `paging: { style: relay-nodes, connection: occupancy, variables: { pageSize:
 * first, cursor: after } }` reads `occupancy { nodes { ... } pageInfo { hasNextPage endCursor } }`.
 */
export const relayNodes = defineStyle({
  name: 'relay-nodes',
  keys: ['connection', 'pageSize', 'maxPageSize'],
  required: ['connection'],
  roles: RELAY_ROLES,
  parse: (input) => relayStyle(input, 'nodes'),
});
