/**
 * Reading an API answer along a declared path, with every mismatch described in one phrase (`data.occupancy.nodes is
 * null, expected a list`). Shared by the paging styles (src/sync/paging/*.ts); pure.
 */

export function describe(value: unknown): string {
  if (value === undefined) return 'missing';
  if (value === null) return 'null';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  if (typeof value === 'number' || typeof value === 'boolean') return `the ${typeof value} ${String(value)}`;
  return Array.isArray(value) ? 'an array' : 'an object';
}

export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Follows `path` from `data`; the violation names the first step that is missing or not an object. */
export function follow(data: unknown, path: readonly string[], root = 'data'): { value: unknown } | string {
  let value: unknown = data;
  let where = root;
  for (const key of path) {
    if (!isObject(value)) return `${where} is ${describe(value)}, expected an object`;
    value = value[key];
    where += `.${key}`;
  }
  return { value };
}

/** `data.a.b` for messages. */
export const where = (path: readonly string[]): string => ['data', ...path].join('.');

/** The list at `path`, or the violation's detail. */
export function listAt(data: unknown, path: readonly string[]): unknown[] | string {
  const found = follow(data, path);
  if (typeof found === 'string') return found;
  if (!Array.isArray(found.value)) return `${where(path)} is ${describe(found.value)}, expected a list`;
  return found.value;
}

/** Where a flattened record keeps the element of the enclosing list it was found in (declarative definitions). */
export const PARENT_KEY = '$parent';

/**
 * Records nested in lists (`buildings[].floorSpaces[].readings`): walks each element of `list` along `each`, one
 * step per level, and returns the innermost elements, each a copy carrying its enclosing element (without the list it
 * was taken from) under `$parent`, so a record can map its floor space id from the parent. Returns the violation's
 * detail when a level is not a list of objects.
 */
export function flattenNested(list: unknown[], each: ReadonlyArray<readonly string[]>, at: string): unknown[] | string {
  let level: unknown[] = list;
  let here = at;
  for (const step of each) {
    const next: unknown[] = [];
    for (const parent of level) {
      if (!isObject(parent)) return `an element of ${here} is ${describe(parent)}, expected an object`;
      const found = follow(parent, step);
      if (typeof found === 'string') return `${here}[].${step.join('.')}: ${found.replace(/^data/, 'element')}`;
      if (!Array.isArray(found.value)) return `${here}[].${step.join('.')} is ${describe(found.value)}, expected a list`;
      const context: Record<string, unknown> = { ...parent };
      delete context[step[0]!];
      for (const child of found.value) next.push(isObject(child) ? { ...child, [PARENT_KEY]: context } : child);
    }
    level = next;
    here += `[].${step.join('.')}`;
  }
  return level;
}

/** The records at a records path (`a.b[].c`), flattened, or the violation's detail. */
export function recordsAt(data: unknown, records: RecordsPath): unknown[] | string {
  const list = listAt(data, records.path);
  if (typeof list === 'string' || records.each.length === 0) return list;
  return flattenNested(list, records.each, where(records.path));
}

/** A records path: the path from `data` to the first list, and the steps into each nested list. */
export interface RecordsPath {
  path: readonly string[];
  each: ReadonlyArray<readonly string[]>;
}

/** `a.b[].c[].d` as the path to the first list and the steps into each nested one. */
export function recordsPathOf(text: string): RecordsPath {
  const groups: string[][] = [[]];
  for (const part of text.replace(/\[\]$/, '').split('.')) {
    groups.at(-1)!.push(part.replace(/\[\]$/, ''));
    if (part.endsWith('[]')) groups.push([]);
  }
  return { path: groups[0]!, each: groups.slice(1) };
}

/** A whole number at `path` (a total the API reports), or the violation's detail. */
export function countAt(data: unknown, path: readonly string[]): number | string {
  const found = follow(data, path);
  if (typeof found === 'string') return found;
  const v = found.value;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) return `${where(path)} is ${describe(v)}, expected a whole number`;
  return v;
}
