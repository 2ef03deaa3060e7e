import { messageOf } from '../errors.ts';
import type { SyncReport, StreamOutcome } from '../sync/engine.ts';
import { formatCount } from '../numbers.ts';
import { QUARANTINED_RECORDS_QUERY } from '../store/status-queries.ts';
import { CANONICAL_STATUSES, canonicalGuess } from '../statuses.ts';

/** A run's report as text: the CLI prints it, the daemons log it. Exit codes are the CLI's (cli/exit-code.ts). */

export interface SummaryFigures {
  customers: number;
  streams: number;
  pages: number;
  records: number;
  rejected: number;
  /** Readings stored with a status that is neither canonical nor mapped to one (src/statuses.ts). */
  unmapped: number;
  /** Customers with a failed stream. */
  failed: number;
  /** Customers skipped because another run held a lock. */
  locked: number;
  interrupted: boolean;
  seconds: number;
}

export interface SummaryOptions {
  /**
   * The time to show, when not the run's own: a one-shot command shows what its user waited, from the process's
   * start (`waitedMs()` of src/process-start.ts), not from the run's; a daemon's pass shows its own.
   */
  elapsedMs?: number;
}

export function summaryFigures(report: SyncReport, options: SummaryOptions = {}): SummaryFigures {
  const { outcomes } = report;
  const elapsedMs = options.elapsedMs ?? report.finishedAt - report.startedAt;
  return {
    customers: new Set(outcomes.map((o) => o.customerId)).size,
    streams: new Set(outcomes.map((o) => o.stateKey)).size,
    pages: outcomes.reduce((n, o) => n + o.pages, 0),
    records: outcomes.reduce((n, o) => n + o.records, 0),
    rejected: outcomes.reduce((n, o) => n + o.rejected, 0),
    unmapped: outcomes.reduce((n, o) => n + o.unmapped, 0),
    failed: new Set(outcomes.filter((o) => o.status === 'failed').map((o) => o.customerId)).size,
    locked: new Set(outcomes.filter((o) => o.status === 'locked').map((o) => o.customerId)).size,
    interrupted: outcomes.some((o) => o.status === 'interrupted'),
    seconds: Math.round(elapsedMs / 100) / 10,
  };
}

/**
 * `sync: 2 customers, 2 streams, 14 pages, 12,345 records, 0 failed in 3.2s` (+ rejected, unmapped, locked and
 * interrupted when any).
 */
export function summaryLine(command: string, report: SyncReport, options: SummaryOptions = {}): string {
  const f = summaryFigures(report, options);
  const parts = [
    `${formatCount(f.customers)} customer${f.customers === 1 ? '' : 's'}`,
    `${formatCount(f.streams)} stream${f.streams === 1 ? '' : 's'}`,
    `${formatCount(f.pages)} page${f.pages === 1 ? '' : 's'}`,
    `${formatCount(f.records)} record${f.records === 1 ? '' : 's'}`,
    ...(f.rejected ? [`${formatCount(f.rejected)} rejected (quarantined)`] : []),
    ...(f.unmapped ? [`${formatCount(f.unmapped)} with an unmapped status`] : []),
    `${formatCount(f.failed)} failed`,
  ];
  if (f.locked) parts.push(`${formatCount(f.locked)} locked`);
  let line = `${command}: ${parts.join(', ')} in ${f.seconds.toFixed(1)}s`;
  if (f.interrupted) line += ' (interrupted: the next run resumes from the last committed page)';
  return line;
}

/**
 * One line per customer and cause, for stderr: a wrong secret fails every stream of a customer the same way, and is
 * one line naming those streams, not one per stream. Locked and quarantined streams get a line each too.
 */
export function problemLines(outcomes: ReadonlyArray<StreamOutcome>): string[] {
  const lines: string[] = [];
  const failures = new Map<string, { customerId: string; streams: string[]; message: string }>();
  for (const o of outcomes) {
    if (o.status === 'failed') {
      const message = messageOf(o.error);
      const key = `${o.customerId}\u0000${message}`;
      const entry = failures.get(key);
      if (entry) entry.streams.push(o.stateKey);
      else failures.set(key, { customerId: o.customerId, streams: [o.stateKey], message });
    }
  }
  for (const f of failures.values()) lines.push(`  ${f.customerId} ${f.streams.join(', ')}: failed: ${f.message}`);
  for (const o of outcomes) {
    if (o.status === 'locked') lines.push(`  ${o.customerId} ${o.stateKey}: locked by another run (nothing done)`);
    else if (o.status !== 'failed' && o.rejected > 0) {
      lines.push(`  ${o.customerId} ${o.stateKey}: ${formatCount(o.rejected)} record(s) broke their declared types and were quarantined (${QUARANTINED_RECORDS_QUERY})`);
    }
    if (o.unmapped > 0) lines.push(`  ${o.customerId} ${o.stateKey}: ${unmappedLine(o.unmapped, o.unmappedStatuses, o.stream)}`);
  }
  return lines;
}

/** What a run did besides its figures: a backfill resumed or already complete, a stream left to a concurrent run. */
export function noteLines(outcomes: ReadonlyArray<StreamOutcome>): string[] {
  return outcomes.flatMap((o) => {
    if (o.status === 'skipped') return [`  ${o.customerId} ${o.stateKey}: skipped: ${o.note ?? 'not run'}`];
    if (o.mode === 'backfill' && o.note?.startsWith('resumed')) return [`  ${o.customerId} ${o.stateKey}: ${o.note}`];
    return [];
  });
}

/**
 * What a run says of readings stored with a status nobody mapped: how many, the values, and the map to add (then a
 * rewind re-reads them, and the upsert rewrites their status).
 */
export function unmappedLine(count: number, statuses: readonly string[], stream: string): string {
  const them = count === 1 ? 'it' : 'them';
  return (
    `${formatCount(count)} reading(s) stored with a status that is neither ${CANONICAL_STATUSES.join(' nor ')} (${statuses.join(', ')}): ` +
    `the reports count ${them} neither occupied nor vacant. Fix: map ${them} in stream ${stream}'s occupancyStatus ` +
    `(map: { ${statuses.map((s) => `${s}: ${canonicalGuess(s)}`).join(', ')} }; \`occupancy-sync check\` names the values), then \`occupancy-sync state rewind --stream ${stream} --to <the first such reading> --yes\` to store them again`
  );
}
