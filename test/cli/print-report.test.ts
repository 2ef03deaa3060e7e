import { describe, expect, it } from 'vitest';
import { printReport } from '../../src/cli/run-command.ts';
import type { CliContext } from '../../src/cli/context.ts';
import type { SyncReport } from '../../src/sync/engine.ts';

/**
 * A one-shot command's summary (sync, backfill, demo) shows the time its user waited (ctx.waitedMs: from the process's
 * start for the executable), in the line and in --json alike, not the run's own: the run here took 0.3 s of a 4.2 s wait.
 */
function printed(json: boolean): string {
  let out = '';
  const ctx = {
    stdout: { write: (text: string) => void (out += text) },
    stderr: { write: () => undefined },
    exitCode: 0,
    waitedMs: () => 4_200,
  } as unknown as CliContext;
  const report: SyncReport = { outcomes: [], startedAt: 1_000, finishedAt: 1_300 };
  printReport(ctx, 'sync', report, { json });
  return out;
}

describe('printReport', () => {
  it('shows the time the user waited, not the run\'s own, in the line and in JSON', () => {
    expect(printed(false)).toBe('sync: 0 customers, 0 streams, 0 pages, 0 records, 0 failed in 4.2s\n');
    expect((JSON.parse(printed(true)) as { seconds: number }).seconds).toBe(4.2);
  });
});
