import { readFileSync } from 'node:fs';

/**
 * The kernel's start time of a process (Linux; null elsewhere or when there is no such process), so a pid reused by
 * another process is not taken for a lock's holder: the SQLite locks (src/store/sqlite/locks.ts) and the SQLite API
 * budget (src/store/sqlite/api-budget.ts) store it beside the pid.
 */
export function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 22 (starttime); the command name (field 2) may contain spaces, so count from its closing parenthesis.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/**
 * How long this process has been running, in milliseconds: what a user of a one-shot command has waited so far
 * (start-up, loading, migrating and the run itself), for the time a command's summary shows (src/app/summary.ts).
 */
export function waitedMs(): number {
  return performance.now();
}
