/**
 * A page's rows as they cross to the SQLite writer thread (writer.ts): the columns whose every value is a number
 * (never NaN) or null travel together in one Float64Array, moved to the thread rather than copied, a null as NaN;
 * the other columns' values in one plain array, row by row. A structured clone of one flat array of every value cost
 * both threads about twice as much (docs/performance.md, "A page's rows moved to the writer thread as columns").
 * The thread binds each value exactly as it was: the same number, null, text or bytes.
 */
export interface RowColumns {
  rows: number;
  /** Per column: whether its values are in `numbers`. */
  numeric: boolean[];
  numbers: Float64Array;
  /** The values of the other columns, row by row. */
  others: unknown[];
}

export function packRows(width: number, values: readonly unknown[]): RowColumns {
  if (!Number.isInteger(width) || width < 1 || values.length % width !== 0) {
    throw new Error(`packRows: ${values.length} values are not rows of ${width}`);
  }
  const rows = values.length / width;
  const numeric = new Array<boolean>(width).fill(true);
  for (let i = 0, c = 0; i < values.length; i++) {
    const v = values[i];
    // v !== v: NaN, which would read back as null.
    if (v !== null && (typeof v !== 'number' || v !== v)) numeric[c] = false;
    if (++c === width) c = 0;
  }
  let numericWidth = 0;
  for (const n of numeric) if (n) numericWidth++;
  const numbers = new Float64Array(rows * numericWidth);
  const others: unknown[] = [];
  for (let i = 0, c = 0, k = 0; i < values.length; i++) {
    const v = values[i];
    if (numeric[c]) numbers[k++] = v === null ? Number.NaN : (v as number);
    else others.push(v);
    if (++c === width) c = 0;
  }
  return { rows, numeric, numbers, others };
}
