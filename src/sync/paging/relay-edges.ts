import { RELAY_ROLES, relayStyle } from './relay.ts';
import { defineStyle } from './style.ts';

/**
 * A Relay connection read through `edges` (GitHub, Shopify): `paging: { style: relay-edges, connection: events,
 * variables: { pageSize: first, cursor: after } }` reads `events { edges { cursor node { ... } } pageInfo { hasNextPage
 * endCursor } }`; the records are the nodes. Without `pageInfo.endCursor` the last edge's cursor is the next page's.
 */
export const relayEdges = defineStyle({
  name: 'relay-edges',
  keys: ['connection', 'pageSize', 'maxPageSize'],
  required: ['connection'],
  roles: RELAY_ROLES,
  parse: (input) => relayStyle(input, 'edges'),
});
