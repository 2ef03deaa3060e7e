import { describe, follow, recordsAt, where } from './answer.ts';
import { defineStyle, listsOf, PAGE_SIZE_ROLE, type PagingStyle } from './style.ts';

/**
 * Token paging (AWS AppSync, many REST-shaped GraphQL APIs): `paging: { style: token, records: list.items, nextToken:
 * list.nextToken, variables: { pageSize: limit, token: nextToken } }`. The answer's token is sent back for the next
 * page; an absent, null or empty token ends the listing.
 */
export const token = defineStyle({
  name: 'token',
  keys: ['records', 'nextToken', 'pageSize', 'maxPageSize'],
  required: ['records', 'nextToken'],
  roles: {
    pageSize: PAGE_SIZE_ROLE,
    token: { type: 'text', carries: 'token of the next page', a: 'a next token', fix: 'check that `paging.variables.token` names the variable the API reads the token from' },
  },
  parse(input) {
    const records = input.records('records');
    const nextToken = input.answerPath('nextToken', true);
    const pageSizeVar = input.variable('pageSize', false);
    const tokenVar = input.variable('token', true);
    const pageSize = input.count('pageSize', 1);
    const maxPageSize = input.count('maxPageSize', 1);
    if (!records || !nextToken || !tokenVar) return undefined;
    const style: PagingStyle = {
      style: 'token',
      variableNames: { ...(pageSizeVar && { pageSize: pageSizeVar }), token: tokenVar },
      roles: token.roles,
      pageSize,
      maxPageSize,
      serverCursors: true,
      canAskForMore: true,
      records,
      recordsKey: 'records',
      lists: listsOf(records),
      reads: [{ paths: [nextToken], holds: 'text' }],
      variables: (page) => ({ ...(pageSizeVar && { [pageSizeVar]: page.pageSize }), [tokenVar]: page.position }),
      read(data) {
        const nodes = recordsAt(data, records);
        if (typeof nodes === 'string') return nodes;
        const found = follow(data, nextToken);
        if (typeof found === 'string') return found;
        const next = found.value;
        if (next === undefined || next === null || next === '') return { nodes, next: null };
        if (typeof next !== 'string') return `${where(nextToken)} is ${describe(next)}, expected a string token or null`;
        return { nodes, next };
      },
      unresumable: () => undefined,
    };
    return style;
  },
});
