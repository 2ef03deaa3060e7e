import { ExitCode, exitCodeFor } from '../errors.ts';
import type { SyncReport, StreamOutcome } from './engine.ts';

const count = (n: number) => n.toLocaleString('en-US');

/**
 * Exit code of a run, for cron and systemd: any ordinary failure 1; only authentication failures 77; only
 * configuration failures 78; nothing failed but a lock was held 75; otherwise 0 (an interrupted run is not a failure:
 * it resumes next time).
 */
export function exitCodeOf(outcomes: ReadonlyArray<StreamOutcome>): number {
  const failed = outcomes.filter((o) => o.status === 'failed').map((o) => exitCodeFor(o.error));
  if (failed.length) {
    const distinct = new Set(failed);
    return distinct.size === 1 ? failed[0]! : ExitCode.FAILURE;
  }
  if (outcomes.some((o) => o.status === 'locked')) return ExitCode.LOCKED;
  return ExitCode.OK;
}

/** `sync: 2 customers, 2 streams, 14 pages, 12,345 records, 0 failed in 3.2s` (+ locked/interrupted when any). */
export function summaryLine(command: string, report: SyncReport): string {
  const { outcomes } = report;
  const customers = new Set(outcomes.map((o) => o.customerId)).size;
  const streams = new Set(outcomes.map((o) => o.stream)).size;
  const pages = outcomes.reduce((n, o) => n + o.pages, 0);
  const records = outcomes.reduce((n, o) => n + o.records, 0);
  const failedCustomers = new Set(outcomes.filter((o) => o.status === 'failed').map((o) => o.customerId)).size;
  const locked = new Set(outcomes.filter((o) => o.status === 'locked').map((o) => o.customerId)).size;
  const interrupted = outcomes.some((o) => o.status === 'interrupted');
  const seconds = ((report.finishedAt - report.startedAt) / 1000).toFixed(1);
  const parts = [
    `${count(customers)} customer${customers === 1 ? '' : 's'}`,
    `${count(streams)} stream${streams === 1 ? '' : 's'}`,
    `${count(pages)} page${pages === 1 ? '' : 's'}`,
    `${count(records)} record${records === 1 ? '' : 's'}`,
    `${count(failedCustomers)} failed`,
  ];
  if (locked) parts.push(`${count(locked)} locked`);
  let line = `${command}: ${parts.join(', ')} in ${seconds}s`;
  if (interrupted) line += ' (interrupted: the next run resumes from the last committed page)';
  return line;
}

/** One line per failed or locked customer stream, for stderr: the summary alone does not say what went wrong. */
export function problemLines(outcomes: ReadonlyArray<StreamOutcome>): string[] {
  return outcomes.flatMap((o) => {
    if (o.status === 'failed') {
      const message = o.error instanceof Error ? o.error.message : String(o.error);
      return [`  ${o.customerId} ${o.stream}: failed: ${message}`];
    }
    if (o.status === 'locked') return [`  ${o.customerId} ${o.stream}: locked by another run (nothing done)`];
    return [];
  });
}
