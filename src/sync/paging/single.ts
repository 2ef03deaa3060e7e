import { recordsAt } from './answer.ts';
import { defineStyle, listsOf, type PagingStyle } from './style.ts';

/**
 * One request answers everything (`paging: { style: single, records: buildings }`). Nothing can ask for more, so an
 * answer holding `maxPageSize` records (the API's documented cap) may have been cut: the page contract fails it
 * (rule `truncated`) rather than commit a window that may be incomplete.
 */
export const single = defineStyle({
  name: 'single',
  keys: ['records', 'maxPageSize'],
  required: ['records'],
  roles: {},
  parse(input) {
    const records = input.records('records');
    const maxPageSize = input.count('maxPageSize', 1);
    if (!records) return undefined;
    const style: PagingStyle = {
      style: 'single',
      variableNames: {},
      roles: single.roles,
      pageSize: undefined,
      maxPageSize,
      serverCursors: false,
      canAskForMore: false,
      records,
      recordsKey: 'records',
      lists: listsOf(records),
      reads: [],
      variables: () => ({}),
      read(data) {
        const nodes = recordsAt(data, records);
        return typeof nodes === 'string' ? nodes : { nodes, next: null };
      },
      unresumable: (position) => `the stored page checkpoint ${JSON.stringify(position.slice(0, 40))} belongs to a paged stream, and this one reads a single page (was the stream's paging changed mid-window?)`,
    };
    return style;
  },
});
