import { countAt, recordsAt } from './answer.ts';
import { defineStyle, digitsOnly, listsOf, PAGE_SIZE_ROLE, type PagingStyle } from './style.ts';

/**
 * Offset paging: `paging: { style: offset, records: readings, variables: { pageSize: limit, offset: offset } }`. The
 * engine sends the page size and the records read so far in the window; a page shorter than asked is the last, as is
 * the page that reaches `total` when the API reports one. The checkpoint is the next offset.
 */
export const offset = defineStyle({
  name: 'offset',
  keys: ['records', 'total', 'pageSize', 'maxPageSize'],
  required: ['records'],
  roles: {
    pageSize: PAGE_SIZE_ROLE,
    offset: { type: 'Int', carries: 'offset', a: 'an offset', fix: 'check that `paging.variables.offset` names the offset variable' },
  },
  parse(input) {
    const records = input.records('records');
    const total = input.answerPath('total', false);
    const limitVar = input.variable('pageSize', true);
    const offsetVar = input.variable('offset', true);
    const pageSize = input.count('pageSize', 1);
    const maxPageSize = input.count('maxPageSize', 1);
    if (!records || !limitVar || !offsetVar) return undefined;
    const style: PagingStyle = {
      style: 'offset',
      variableNames: { pageSize: limitVar, offset: offsetVar },
      roles: offset.roles,
      pageSize,
      maxPageSize,
      serverCursors: false,
      canAskForMore: true,
      records,
      recordsKey: 'records',
      lists: listsOf(records),
      reads: total ? [{ paths: [total], holds: 'Int' }] : [],
      variables: (page) => ({ [limitVar]: page.pageSize, [offsetVar]: page.position === null ? 0 : Number(page.position) }),
      read(data, page) {
        const nodes = recordsAt(data, records);
        if (typeof nodes === 'string') return nodes;
        if (nodes.length > page.pageSize) {
          return `a page of ${nodes.length} records, more than the ${page.pageSize} asked for (does the limit count another level of the answer?)`;
        }
        const read = (page.position === null ? 0 : Number(page.position)) + nodes.length;
        let more = nodes.length === page.pageSize && nodes.length > 0;
        if (total) {
          const count = countAt(data, total);
          if (typeof count === 'string') return count;
          more = more && read < count;
        }
        return { nodes, next: more ? String(read) : null };
      },
      unresumable: digitsOnly('an offset'),
    };
    return style;
  },
});
