/**
 * The one results table: each figure with its baseline from the same run, the ratio, the goal and whether it is
 * met. Rendered as a Markdown table, which reads well both in a terminal and in docs/performance.md.
 */

export interface Row {
  benchmark: string;
  ours: string;
  baseline: string;
  /** Undefined when there is no ratio (auth economy) or the figure was skipped. */
  ratio?: number;
  goal: string;
  met: boolean | undefined;
}

export function renderTable(rows: readonly Row[]): string {
  const header = ['Benchmark', 'Ours', 'Baseline (same run)', 'Ratio', 'Goal', 'Met'];
  const cells = rows.map((r) => [
    r.benchmark,
    r.ours,
    r.baseline,
    r.ratio === undefined ? '-' : r.ratio.toFixed(2),
    r.goal,
    r.met === undefined ? 'n/a' : r.met ? 'yes' : 'NO',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) => `| ${c.map((v, i) => v.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...cells.map(line)].join('\n');
}
