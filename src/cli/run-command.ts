import { messageOf } from '../errors.ts';
import { parseDocumentSource } from '../api/documents.ts';
import { requireApi, selectCustomers } from '../config.ts';
import { globalSecrets } from '../logger.ts';
import type { Store } from '../store/types.ts';
import type { ProgressEvent, RunRequest, SyncReport } from '../sync/engine.ts';
import { openForWriting } from '../app/database.ts';
import { runOnce } from '../app/run-once.ts';
import { loadStreams, selectStreams } from '../app/streams.ts';
import { writeMetricsTextfile } from '../app/textfile.ts';
import { noteLines, problemLines, summaryFigures, summaryLine } from '../app/summary.ts';
import { exitCodeOf } from './exit-code.ts';
import type { CliContext } from './context.ts';
import { formatCount } from '../numbers.ts';
import { holdErrors } from './held-errors.ts';

/** The summary as one JSON object (`sync --json`): the figures, the exit code and every stream's outcome. */
export function summaryJson(command: string, report: SyncReport, scrub: (text: string) => string, elapsedMs?: number): string {
  const outcomes = report.outcomes.map((o) => ({
    customerId: o.customerId,
    stream: o.stateKey,
    mode: o.mode,
    status: o.status,
    pages: o.pages,
    records: o.records,
    rejected: o.rejected,
    unmapped: o.unmapped,
    ...(o.unmapped > 0 && { unmappedStatuses: o.unmappedStatuses }),
    windows: o.windows,
    watermark: o.watermark,
    ...(o.note !== undefined && { note: o.note }),
    ...(o.error !== undefined && { error: scrub(messageOf(o.error)) }),
  }));
  return `${JSON.stringify({ command, ...summaryFigures(report, { elapsedMs }), exitCode: exitCodeOf(report.outcomes), outcomes }, null, 2)}\n`;
}

/**
 * Prints a run's outcome and sets the exit code: problems (one line per customer and cause) and notes on stderr,
 * then the one-line summary on stdout, or with `json` the summary as one JSON object instead.
 */
export function printReport(ctx: CliContext, command: string, result: SyncReport, options: { json?: boolean; extra?: string[] } = {}): void {
  for (const line of [...problemLines(result.outcomes), ...noteLines(result.outcomes), ...(options.extra ?? [])]) {
    ctx.stderr.write(`${globalSecrets.scrub(line)}\n`);
  }
  // The time shown is the time the user waited (start-up and migrations too), not the run's own.
  const elapsedMs = ctx.waitedMs();
  ctx.stdout.write(options.json ? summaryJson(command, result, (t) => globalSecrets.scrub(t), elapsedMs) : `${summaryLine(command, result, { elapsedMs })}\n`);
  ctx.exitCode = exitCodeOf(result.outcomes);
}

/**
 * A backfill asked again for a range it completed runs nothing and records no run, so the run that loaded the range
 * stays the last one in `status`; this line says which it was.
 */
async function completeLines(store: Store, result: SyncReport, request: RunRequest | undefined): Promise<string[]> {
  if (request?.mode !== 'backfill') return [];
  const lines: string[] = [];
  for (const o of result.outcomes.filter((x) => x.note === 'complete')) {
    const [last] = (await store.lastRuns(o.customerId)).filter((r) => r.stateKey === o.stateKey);
    const by = last ? ` (run ${last.id}, finished ${last.finishedAt ?? 'never'}, ${formatCount(last.records)} records)` : '';
    lines.push(
      `  ${o.customerId} ${o.stateKey}: [${new Date(request.from).toISOString()}, ${new Date(request.to).toISOString()}) is already complete${by}; ` +
        'nothing to do. Add --restart to load it again',
    );
  }
  return lines;
}

/** The command-line flow of `sync` and `backfill`: config, customers, database, run, report, exit code. */
export async function runCommand(
  ctx: CliContext,
  command: string,
  flags: {
    customer?: string;
    stream?: string;
    request?: RunRequest;
    json?: boolean;
    /** Live progress; `finish` runs before the summary is printed. */
    progress?: { onProgress(event: ProgressEvent): void; finish(): void };
  },
): Promise<SyncReport> {
  const config = ctx.config();
  requireApi(config);
  const customers = selectCustomers(config, flags.customer);
  const streams = selectStreams(flags.stream, flags.request, loadStreams(config, { parseDocument: parseDocumentSource }).streams);
  const logger = ctx.logger();
  const store = await openForWriting(config.database, logger, ctx.signal);
  try {
    let result: SyncReport | undefined;
    // Each failure is printed once, by printReport: the engine's log line of the same error is dropped.
    const held = holdErrors(logger);
    try {
      result = await runOnce({ config, store, logger: held.logger, customers, streams, request: flags.request, signal: ctx.signal, onProgress: flags.progress?.onProgress });
    } finally {
      flags.progress?.finish();
      held.release(result?.outcomes.map((o) => o.error).filter((e) => e !== undefined) ?? []);
    }
    printReport(ctx, command, result, { json: flags.json, extra: await completeLines(store, result, flags.request) });
    if (config.metrics.textfile) {
      const path = config.metrics.textfile;
      // The run's outcome stands whatever happens to its metrics file: one line, the exit code unchanged.
      await writeMetricsTextfile(path, result, store).catch((error: unknown) =>
        ctx.stderr.write(
          `occupancy-sync: METRICS_TEXTFILE=${JSON.stringify(path)}: cannot write the metrics file (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}). ` +
            'Fix: point it at a writable directory, e.g. the textfile collector\'s\n',
        ),
      );
    }
    return result;
  } finally {
    await store.close();
  }
}
