import type { DocumentNode, FragmentDefinitionNode, OperationDefinitionNode, SelectionSetNode } from 'graphql';

/**
 * What a query document selects, by response key (aliases included, through inline fragments and fragment spreads):
 * lets the definitions loader check, before any request, that the records path and every mapped field are in the
 * answer the document asks for. A mapping to a field the document does not select would reject every record.
 */

type Sets = SelectionSetNode[];

function fragmentsOf(document: DocumentNode): Map<string, FragmentDefinitionNode> {
  return new Map(
    document.definitions.filter((d): d is FragmentDefinitionNode => d.kind === 'FragmentDefinition').map((d) => [d.name.value, d]),
  );
}

/** The selection sets of the fields answered under `key` in `sets` (undefined: not selected; [] : a leaf). */
function child(sets: Sets, key: string, fragments: Map<string, FragmentDefinitionNode>, seen = new Set<string>()): Sets | undefined {
  let found: Sets | undefined;
  for (const set of sets) {
    for (const selection of set.selections) {
      let inner: Sets | undefined;
      if (selection.kind === 'Field') {
        if ((selection.alias ?? selection.name).value !== key) continue;
        inner = selection.selectionSet ? [selection.selectionSet] : [];
      } else if (selection.kind === 'InlineFragment') {
        inner = child([selection.selectionSet], key, fragments, seen);
      } else {
        const name = selection.name.value;
        const fragment = fragments.get(name);
        if (!fragment || seen.has(name)) continue;
        inner = child([fragment.selectionSet], key, fragments, new Set([...seen, name]));
      }
      if (inner) found = [...(found ?? []), ...inner];
    }
  }
  return found;
}

/** The selection sets at each level of a records path: [the first list's elements, ..., the records']. */
export function recordLevels(
  document: DocumentNode,
  operation: OperationDefinitionNode,
  path: readonly string[],
  each: ReadonlyArray<readonly string[]>,
): { levels: Sets[] } | { missing: string } {
  const fragments = fragmentsOf(document);
  let sets: Sets = [operation.selectionSet];
  const levels: Sets[] = [];
  let where = 'data';
  for (const step of [path, ...each]) {
    for (const key of step) {
      const next = child(sets, key, fragments);
      where += `.${key}`;
      if (!next || next.length === 0) return { missing: where };
      sets = next;
    }
    levels.push(sets);
    where += '[]';
  }
  return { levels };
}

/** Whether a record path (`a.b`, after its `$parent.` steps were taken) is selected at `sets`. */
export function selects(document: DocumentNode, sets: Sets, path: readonly string[]): boolean {
  const fragments = fragmentsOf(document);
  let current: Sets | undefined = sets;
  for (const key of path) {
    current = child(current, key, fragments);
    if (!current) return false;
  }
  return true;
}
