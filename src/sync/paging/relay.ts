import { describe, follow, isObject, where } from './answer.ts';
import { PAGE_SIZE_ROLE, type PageAt, type PageRead, type PagingInput, type PagingStyle, type VariableRole } from './style.ts';

/** The variables of a Relay connection: the page size (`first`), and the cursor after which the page starts. */
export const RELAY_ROLES: Readonly<Record<string, VariableRole>> = {
  pageSize: PAGE_SIZE_ROLE,
  cursor: { type: 'text', carries: 'cursor of the next page', a: 'a cursor', fix: 'check that `paging.variables.cursor` names the variable the API reads the cursor from' },
};

/**
 * The Relay connection shared by `relay-nodes` and `relay-edges`: `connection` is the path to an object with
 * `pageInfo { hasNextPage endCursor }` and the records as `nodes` or `edges { cursor node }`.
 */
export function relayStyle(input: PagingInput, records: 'nodes' | 'edges'): PagingStyle | undefined {
  const connection = input.answerPath('connection', true);
  const pageSizeVar = input.variable('pageSize', false);
  const cursorVar = input.variable('cursor', true);
  const pageSize = input.count('pageSize', 1);
  const maxPageSize = input.count('maxPageSize', 1);
  if (!connection || !cursorVar) return undefined;
  const at = where(connection);
  const recordsPath = records === 'nodes' ? [...connection, 'nodes'] : [...connection, 'edges', 'node'];
  return {
    style: records === 'nodes' ? 'relay-nodes' : 'relay-edges',
    variableNames: { ...(pageSizeVar && { pageSize: pageSizeVar }), cursor: cursorVar },
    roles: RELAY_ROLES,
    pageSize,
    maxPageSize,
    serverCursors: true,
    canAskForMore: true,
    records: { path: recordsPath, each: [] },
    recordsKey: 'connection',
    lists: [[...connection, records]],
    // Edges carry their own cursors: the last edge's stands in for a pageInfo.endCursor the document does not select.
    reads: [
      { paths: [[...connection, 'pageInfo', 'hasNextPage']], holds: 'Boolean' },
      {
        paths: records === 'nodes' ? [[...connection, 'pageInfo', 'endCursor']] : [[...connection, 'pageInfo', 'endCursor'], [...connection, 'edges', 'cursor']],
        holds: 'text',
      },
    ],
    variables: (page: PageAt) => ({ ...(pageSizeVar && { [pageSizeVar]: page.pageSize }), [cursorVar]: page.position }),
    read(data): PageRead | string {
      const found = follow(data, connection);
      if (typeof found === 'string') return found;
      const c = found.value;
      if (!isObject(c)) return `${at} is ${describe(c)}, expected an object with ${records} and pageInfo`;
      let nodes: unknown[];
      let lastEdgeCursor: unknown;
      if (records === 'nodes') {
        if (!Array.isArray(c.nodes)) return `${at}.nodes is ${describe(c.nodes)}, expected a list`;
        nodes = c.nodes;
      } else {
        if (!Array.isArray(c.edges)) return `${at}.edges is ${describe(c.edges)}, expected a list`;
        nodes = new Array(c.edges.length);
        for (let i = 0; i < c.edges.length; i++) {
          const edge = c.edges[i];
          if (!isObject(edge)) return `${at}.edges[${i}] is ${describe(edge)}, expected an object with node`;
          nodes[i] = edge.node;
        }
        lastEdgeCursor = (c.edges.at(-1) as Record<string, unknown> | undefined)?.cursor;
      }
      const pageInfo = c.pageInfo;
      if (!isObject(pageInfo)) return `${at}.pageInfo is ${describe(pageInfo)}, expected { hasNextPage, endCursor }`;
      if (typeof pageInfo.hasNextPage !== 'boolean') return `${at}.pageInfo.hasNextPage is ${describe(pageInfo.hasNextPage)}, expected a boolean`;
      const endCursor = records === 'edges' ? (pageInfo.endCursor ?? lastEdgeCursor) : pageInfo.endCursor;
      if (!pageInfo.hasNextPage) return { nodes, next: null };
      if (typeof endCursor !== 'string' || endCursor.length === 0) {
        return `${at}.pageInfo.hasNextPage is true but endCursor is ${describe(endCursor)}, so the next page cannot be asked for`;
      }
      return { nodes, next: endCursor };
    },
    unresumable: () => undefined,
  };
}
