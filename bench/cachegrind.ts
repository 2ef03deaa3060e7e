/**
 * Instruction counts by function from valgrind's cachegrind (`--cache-sim=no`: its one event is Ir, instructions
 * executed), for bench/replay-instructions.ts. A count does not move with what else the machine runs, as CPU seconds
 * on this VM do by a fifth or more; it is not time (a cache miss costs none), so it answers "how much work", not
 * "how long".
 */

export interface Instructions {
  total: number;
  /** By function, as cachegrind names them (`???` for code V8 generated at run time). */
  byFunction: Map<string, number>;
}

/** Parses a cachegrind output file: `fn=` starts a function, then `line count` rows; `summary:` is the total. */
export function parseCachegrind(text: string): Instructions {
  const byFunction = new Map<string, number>();
  let fn: string | undefined;
  let total: number | undefined;
  for (const line of text.split('\n')) {
    if (line.startsWith('fn=')) fn = line.slice(3);
    else if (line.startsWith('summary:')) total = Number(line.slice(8).trim());
    else if (fn !== undefined && /^\d/.test(line)) {
      const count = Number(line.split(' ')[1]);
      if (Number.isFinite(count)) byFunction.set(fn, (byFunction.get(fn) ?? 0) + count);
    }
  }
  if (total === undefined || !Number.isFinite(total)) throw new Error('not a cachegrind output file: no summary line');
  return { total, byFunction };
}

/**
 * Instructions per row between a short run and a long one of the same implementation: what the rows in between
 * cost, without what every run pays once (start-up, module loading, the first compilations).
 */
export function perRow(long: Instructions, longRows: number, short: Instructions, shortRows: number): Instructions {
  if (longRows <= shortRows) throw new RangeError(`the long run (${longRows} rows) must hold more rows than the short one (${shortRows})`);
  const rows = longRows - shortRows;
  const byFunction = new Map<string, number>();
  for (const name of new Set([...long.byFunction.keys(), ...short.byFunction.keys()])) {
    byFunction.set(name, ((long.byFunction.get(name) ?? 0) - (short.byFunction.get(name) ?? 0)) / rows);
  }
  return { total: (long.total - short.total) / rows, byFunction };
}
