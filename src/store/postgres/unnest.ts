import { perSink, type SinkDef } from '../sinks.ts';

/**
 * The Postgres upsert of a page: one statement. Every row column travels as one typed array and unnest turns them
 * back into rows, so the text is fixed (prepared once per connection) whatever the page size, and a page costs one
 * round trip. Per-page values (customer, source, ingested_at) are scalars.
 */

export const upsertText = perSink(unnestText);

function unnestText(def: SinkDef<unknown>): string {
  const page = new Map(def.pageColumns.map((c, i) => [c.name, `$${i + 1}::${c.type}`]));
  const arrays = def.rowColumns.map((c, i) => `$${def.pageColumns.length + i + 1}::${c.type}[]`);
  const value = (name: string) => page.get(name) ?? `u.${name}`;
  const read = new Set<string>();
  const computed = def.computed.map((c) => c.sql.replace(/:(\w+)/g, (_, name: string) => (read.add(name), value(name))));
  const plain = [...def.pageColumns, ...def.rowColumns].map((c) => c.name).filter((name) => !read.has(name));
  return (
    `INSERT INTO ${def.writeTable} (${[...plain, ...def.computed.map((c) => c.column)].join(', ')}) ` +
    `SELECT ${[...plain.map(value), ...computed].join(', ')} FROM unnest(${arrays.join(', ')}) ` +
    `AS u(${def.rowColumns.map((c) => c.name).join(', ')}) ${def.onConflict}`
  );
}

/**
 * Column arrays for unnest. Postgres refuses an upsert that touches one row twice ("ON CONFLICT DO UPDATE command
 * cannot affect row a second time"), which SQLite's row-by-row upsert accepts (last one wins); in-page duplicates are
 * therefore collapsed here, keeping the last, so both dialects end with the same row. A row's slot is found through
 * one map per key column (no joined string per row: see docs/performance.md, "Against the limit (replay)").
 */
export function columnsOf(def: SinkDef<unknown>, records: ReadonlyArray<unknown>, prepared: unknown): unknown[] {
  const width = def.rowColumns.length;
  const columns = def.rowColumns.map(() => new Array<unknown>(records.length));
  const row = new Array<unknown>(width);
  const slots = new RowSlots(def.rowKey);
  let n = 0;
  for (let i = 0; i < records.length; i++) {
    def.fill(records[i], row, 0, i, prepared);
    const slot = slots.slotOf(row, n);
    if (slot === n) n++;
    for (let c = 0; c < width; c++) columns[c]![slot] = row[c];
  }
  if (n < records.length) for (const column of columns) column.length = n;
  return columns.map(bound);
}

type Level = Map<unknown, Level | number>;

/** The slot of each distinct key of a page's rows: nested maps keyed by the key columns' values. */
class RowSlots {
  readonly #key: readonly number[];
  readonly #root: Level = new Map();

  constructor(key: readonly number[]) {
    this.#key = key;
  }

  /** The slot of the row's key: the one it was given before, else `next`, which it is given now. */
  slotOf(row: readonly unknown[], next: number): number {
    const key = this.#key;
    const last = key.length - 1;
    let level = this.#root;
    for (let k = 0; k < last; k++) {
      const value = row[key[k]!];
      let deeper = level.get(value) as Level | undefined;
      if (deeper === undefined) level.set(value, (deeper = new Map()));
      level = deeper;
    }
    const value = row[key[last]!];
    const at = level.get(value) as number | undefined;
    if (at !== undefined) return at;
    level.set(value, next);
    return next;
  }
}

/** Rows of `width` values, flat in `values`, as one array per column (Executor.bulk's unnest). */
export function columnsOfRows(values: readonly unknown[], width: number): unknown[] {
  const rows = values.length / width;
  return Array.from({ length: width }, (_, c) => {
    const column = new Array<unknown>(rows);
    for (let r = 0; r < rows; r++) column[r] = values[r * width + c];
    return bound(column);
  });
}

/** A column as its array literal when arrayLiteral can write it, else as the array for postgres.js to write. */
const bound = (column: readonly unknown[]): unknown => arrayLiteral(column) ?? column;

/**
 * A column of numbers, strings, booleans and nulls as a Postgres array literal (`{1,NULL,"a\"b"}`), which the server
 * parses by the parameter's declared type (`$1::int4[]`). postgres.js writes an array element by element, each
 * through its type's serializer: a timestamptz element is parsed into a Date and printed again, so a page's arrays
 * were its largest cost in the process (docs/performance.md, issue 40). The store's values are checked and canonical
 * before they are bound (timestamps as canonical ISO text), so the text the server parses is the text checked.
 * Undefined: anything else (a Date, a Buffer, a bigint, an infinite number, undefined), left to postgres.js.
 */
export function arrayLiteral(values: readonly unknown[]): string | undefined {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (i > 0) out += ',';
    if (v === null) out += 'NULL';
    else if (typeof v === 'number') {
      if (!Number.isFinite(v)) return undefined;
      out += String(v);
    } else if (typeof v === 'string') out += `"${v.includes('"') || v.includes('\\') ? v.replace(/[\\"]/g, '\\$&') : v}"`;
    else if (typeof v === 'boolean') out += v ? 't' : 'f';
    else return undefined;
  }
  return `${out}}`;
}
