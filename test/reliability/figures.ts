import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Figures of the reliability suite. Each test publishes its rows here: they are written to
 * test-results/reliability/<section>.json (scripts/reliability-report.ts renders docs/reliability.md from those
 * files), and compared with the committed docs/reliability.md, so the page cannot drift from what the tests prove.
 *
 * Only deterministic quantities go into a row (seeded counts, planned sizes, outcomes); timings and other
 * run-dependent measurements go into `measured`, which is kept in the JSON but never compared.
 */

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const FIGURES_DIR = join(ROOT, 'test-results', 'reliability');
export const DOC_PATH = join(ROOT, 'docs', 'reliability.md');

/** RELIABILITY_SCALE multiplies the heavy counts for a local soak; the published figures are those of scale 1. */
export const SCALE = (() => {
  const raw = process.env.RELIABILITY_SCALE;
  const n = raw === undefined || raw === '' ? 1 : Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`RELIABILITY_SCALE=${JSON.stringify(raw)}: use a positive number, e.g. 5`);
  return n;
})();

export const scaled = (count: number): number => Math.max(1, Math.round(count * SCALE));

export interface FigureRow {
  /** Stable id, first cell of the row, e.g. `webhook-stream/tampered`. */
  key: string;
  /** What was tried. */
  tried: string;
  /** How many times (deterministic). */
  count: number;
  /** What held, in words (deterministic). */
  held: string;
  /**
   * For a count that depends on timing (a request timing out under CPU load shifts the sandbox's fault draw): the
   * relative deviation from the documented count that is still in agreement. Rendered as `~N`.
   */
  tolerance?: number;
}

export interface FigureSection {
  section: string;
  title: string;
  rows: FigureRow[];
  /** Run-dependent measurements (durations, memory): recorded, never compared. */
  measured?: Record<string, number | string>;
}

const fmt = (n: number) => n.toLocaleString('en-US');

export function renderRow(row: FigureRow): string {
  const cell = (s: string) => s.replace(/\|/g, '\\|');
  return `| \`${row.key}\` | ${cell(row.tried)} | ${row.tolerance ? '~' : ''}${fmt(row.count)} | ${cell(row.held)} |`;
}

/** Whether a documented line agrees with a row: identical, or within the row's tolerance on the count. */
function agrees(line: string, row: FigureRow): boolean {
  if (line === renderRow(row)) return true;
  if (!row.tolerance) return false;
  const [before, after] = renderRow(row).split(/ \| ~[\d,]+ \| /);
  const match = / \| ~([\d,]+) \| /.exec(line);
  if (!match || !before || after === undefined || !line.startsWith(`${before} | ~`) || !line.endsWith(` | ${after}`)) return false;
  const documented = Number(match[1]!.replace(/,/g, ''));
  return Math.abs(documented - row.count) <= row.tolerance * Math.max(documented, row.count);
}

/**
 * Writes the section's JSON and checks each row against docs/reliability.md (at scale 1 only). Returns the rows
 * that differ or are missing, so the caller's expect() shows them; regenerate the page with
 * `node --import tsx scripts/reliability-report.ts` after the suite ran.
 */
export function publishFigures(section: FigureSection): string[] {
  mkdirSync(FIGURES_DIR, { recursive: true });
  writeFileSync(join(FIGURES_DIR, `${section.section}.json`), `${JSON.stringify({ ...section, scale: SCALE }, null, 2)}\n`);
  return disagreements(section.rows);
}

/** The rows that disagree with docs/reliability.md (none at a scale other than 1). */
function disagreements(rows: FigureRow[]): string[] {
  if (SCALE !== 1) return [];
  let doc = '';
  try {
    doc = readFileSync(DOC_PATH, 'utf8');
  } catch {
    return [`docs/reliability.md is missing: run node --import tsx scripts/reliability-report.ts`];
  }
  const lines = doc.split('\n');
  return rows
    .filter((row) => !lines.some((line) => agrees(line, row)))
    .map((row) => `not in docs/reliability.md: ${renderRow(row)}${row.tolerance ? ` (count within ${row.tolerance * 100} %)` : ''}`);
}

/**
 * The figures of a section whose rows come from several tests. Each test records its row as its last step, and
 * record() fails that test when the row is not in the plan (`keys`), comes twice, or disagrees with
 * docs/reliability.md: the row is checked where it is produced, so a run filtered with -t checks exactly what it ran,
 * and no test depends on another one having run. publish() (the file's afterAll) writes the section's JSON once
 * every planned row is in, in the plan's order; a filtered run, or one where a case failed (and said so), leaves
 * the last complete JSON alone rather than writing a partial section.
 */
export class Figures {
  readonly #section: Omit<FigureSection, 'rows' | 'measured'>;
  readonly #keys: readonly string[];
  readonly #rows = new Map<string, FigureRow>();
  /** Run-dependent measurements, kept in the JSON only. */
  readonly measured: Record<string, number | string> = {};

  constructor(section: Omit<FigureSection, 'rows' | 'measured'>, keys: readonly string[]) {
    if (new Set(keys).size !== keys.length) throw new Error(`${section.section}: a key is planned twice: ${keys.join(', ')}`);
    this.#section = section;
    this.#keys = keys;
  }

  /** Records a row, checked against the plan and docs/reliability.md; throws (failing the calling test) if it is off. */
  record(row: FigureRow): void {
    if (!this.#keys.includes(row.key)) throw new Error(`${this.#section.section}: row ${row.key} is not in the plan (${this.#keys.join(', ')})`);
    if (this.#rows.has(row.key)) throw new Error(`${this.#section.section}: row ${row.key} recorded twice`);
    const problems = disagreements([row]);
    if (problems.length > 0) throw new Error(problems.join('\n'));
    this.#rows.set(row.key, row);
  }

  /** Keys of the plan with no row yet. */
  missing(): string[] {
    return this.#keys.filter((key) => !this.#rows.has(key));
  }

  /** Writes the section's JSON when every planned row is in; returns whether it did. */
  publish(): boolean {
    if (this.missing().length > 0) return false;
    const rows = this.#keys.map((key) => this.#rows.get(key)!);
    mkdirSync(FIGURES_DIR, { recursive: true });
    const measured = Object.keys(this.measured).length > 0 ? { measured: this.measured } : {};
    writeFileSync(join(FIGURES_DIR, `${this.#section.section}.json`), `${JSON.stringify({ ...this.#section, rows, ...measured, scale: SCALE }, null, 2)}\n`);
    return true;
  }
}
