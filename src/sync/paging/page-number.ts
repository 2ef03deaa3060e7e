import { countAt, recordsAt } from './answer.ts';
import { defineStyle, digitsOnly, listsOf, PAGE_SIZE_ROLE, type PagingStyle } from './style.ts';

/**
 * Page numbers: `paging: { style: page-number, records: page.readings, total: page.totalCount, variables: { pageSize:
 * pageSize, page: page } }`. Pages count from `firstPage` (default 1). The listing ends at a page shorter than asked,
 * or at the page that reaches `total` (records) or `totalPages` when the API reports them. The checkpoint is the
 * next page's number.
 */
export const pageNumber = defineStyle({
  name: 'page-number',
  keys: ['records', 'total', 'totalPages', 'firstPage', 'pageSize', 'maxPageSize'],
  required: ['records'],
  roles: {
    pageSize: PAGE_SIZE_ROLE,
    page: { type: 'Int', carries: 'page number', a: 'a page number', fix: 'check `paging.firstPage` (0 or 1) and that `paging.variables.page` names the page number variable' },
  },
  parse(input) {
    const records = input.records('records');
    const total = input.answerPath('total', false);
    const totalPages = input.answerPath('totalPages', false);
    const sizeVar = input.variable('pageSize', true);
    const pageVar = input.variable('page', true);
    const pageSize = input.count('pageSize', 1);
    const maxPageSize = input.count('maxPageSize', 1);
    const firstPage = input.count('firstPage', 0) ?? 1;
    if (firstPage > 1) input.src.error([...input.at, 'firstPage'], `firstPage must be 0 or 1, got ${firstPage}`, 'write firstPage: 1 when the first page is page 1, 0 when it is page 0');
    if (!records || !sizeVar || !pageVar || firstPage > 1) return undefined;
    const numberOf = (cursor: string | null) => (cursor === null ? firstPage : Number(cursor));
    const style: PagingStyle = {
      style: 'page-number',
      variableNames: { pageSize: sizeVar, page: pageVar },
      roles: pageNumber.roles,
      pageSize,
      maxPageSize,
      serverCursors: false,
      canAskForMore: true,
      records,
      recordsKey: 'records',
      lists: listsOf(records),
      reads: [...(total ? [{ paths: [total], holds: 'Int' as const }] : []), ...(totalPages ? [{ paths: [totalPages], holds: 'Int' as const }] : [])],
      variables: (page) => ({ [sizeVar]: page.pageSize, [pageVar]: numberOf(page.position) }),
      read(data, page) {
        const nodes = recordsAt(data, records);
        if (typeof nodes === 'string') return nodes;
        if (nodes.length > page.pageSize) return `a page of ${nodes.length} records, more than the ${page.pageSize} asked for`;
        const number = numberOf(page.position);
        const pagesRead = number - firstPage + 1;
        let more = nodes.length === page.pageSize && nodes.length > 0;
        if (total) {
          const count = countAt(data, total);
          if (typeof count === 'string') return count;
          more = more && pagesRead * page.pageSize < count;
        }
        if (totalPages) {
          const count = countAt(data, totalPages);
          if (typeof count === 'string') return count;
          more = more && pagesRead < count;
        }
        return { nodes, next: more ? String(number + 1) : null };
      },
      unresumable: digitsOnly('a page number'),
    };
    return style;
  },
});
