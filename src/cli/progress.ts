import type { Clock } from '../clock.ts';
import type { Logger } from '../logger.ts';
import type { ProgressEvent } from '../sync/engine.ts';
import { formatCount } from '../numbers.ts';

export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '?';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

export interface ProgressSnapshot {
  windowsDone: number;
  windowsTotal: number;
  records: number;
  rowsPerSecond: number;
  /** Undefined until something was done in this run. */
  etaMs: number | undefined;
}

/**
 * Aggregates progress events over customers. Rate and ETA count only this run's work (windows done before a
 * resume are in `windowsDone` but not in the rate). The engine sends a first event before any page, so the
 * first event of each stream is its starting point.
 */
export class ProgressTracker {
  readonly #clock: Clock;
  readonly #startedAt: number;
  readonly #latest = new Map<string, ProgressEvent>();
  readonly #initialDone = new Map<string, number>();

  constructor(clock: Clock) {
    this.#clock = clock;
    this.#startedAt = clock.now();
  }

  update(event: ProgressEvent): void {
    const key = `${event.customerId}\u0000${event.stateKey}`;
    if (!this.#initialDone.has(key)) this.#initialDone.set(key, event.windowsDone);
    this.#latest.set(key, event);
  }

  snapshot(): ProgressSnapshot {
    let windowsDone = 0;
    let windowsTotal = 0;
    let records = 0;
    let doneThisRun = 0;
    for (const [key, e] of this.#latest) {
      windowsDone += e.windowsDone;
      windowsTotal += e.windowsTotal;
      records += e.records;
      doneThisRun += e.windowsDone - (this.#initialDone.get(key) ?? 0);
    }
    const elapsed = Math.max(1, this.#clock.now() - this.#startedAt);
    const remaining = windowsTotal - windowsDone;
    return {
      windowsDone,
      windowsTotal,
      records,
      rowsPerSecond: (records * 1000) / elapsed,
      etaMs: doneThisRun > 0 ? (elapsed / doneThisRun) * remaining : remaining === 0 ? 0 : undefined,
    };
  }

  line(): string {
    const s = this.snapshot();
    const pct = s.windowsTotal ? Math.floor((100 * s.windowsDone) / s.windowsTotal) : 100;
    return `windows ${formatCount(s.windowsDone)}/${formatCount(s.windowsTotal)} (${pct}%), ${formatCount(s.records)} rows, ${formatCount(s.rowsPerSecond)} rows/s, ETA ${s.etaMs === undefined ? '?' : formatDuration(s.etaMs)}`;
  }
}

/**
 * On a TTY: one live line rewritten in place (at most 10 times a second). Otherwise: a log line at most every
 * `intervalMs`, so log files stay readable.
 */
export function createProgressReporter(options: {
  clock: Clock;
  /** The terminal's live line (see cli/status-line.ts); without one, progress goes to the log. */
  statusLine: { show(text: string): void; done(): void } | undefined;
  logger: Logger;
  intervalMs?: number;
}): { onProgress(event: ProgressEvent): void; finish(): void } {
  const tracker = new ProgressTracker(options.clock);
  const line = options.statusLine;
  const interval = line ? 100 : (options.intervalMs ?? 5000);
  let lastShown = Number.NEGATIVE_INFINITY;
  const show = () => {
    lastShown = options.clock.now();
    if (line) {
      line.show(`backfill: ${tracker.line()}`);
    } else {
      const s = tracker.snapshot();
      options.logger.info({ windowsDone: s.windowsDone, windowsTotal: s.windowsTotal, rows: s.records, rowsPerSecond: Math.round(s.rowsPerSecond), etaMs: s.etaMs }, `backfill progress: ${tracker.line()}`);
    }
  };
  return {
    onProgress(event) {
      tracker.update(event);
      if (options.clock.now() - lastShown >= interval) show();
    },
    finish() {
      if (tracker.snapshot().windowsTotal > 0) show();
      line?.done();
    },
  };
}
