import type { CommandModule } from '../context.ts';
import { systemClock } from '../../clock.ts';
import { ConfigError } from '../../errors.ts';
import { toIsoUtc } from '../../store/types.ts';
import { createProgressReporter } from '../../sync/progress.ts';
import { runCommand } from '../../sync/runner.ts';
import { parseInstant } from '../../sync/timestamps.ts';

export const backfillCommand: CommandModule = (program, ctx) => {
  program
    .command('backfill')
    .description(
      'Load a historical range [--from, --to) of an incremental stream, resumably. A backfill keeps its own state\n' +
        '(<stream>#backfill): it never moves the incremental watermark, and can run while `sync` runs from cron.',
    )
    .requiredOption('--from <time>', 'start of the range, inclusive (ISO 8601: 2026-01-01 or 2026-01-01T06:00:00Z)')
    .requiredOption('--to <time>', 'end of the range, exclusive (same format)')
    .option('--customer <id>', 'only this customer')
    .option('--stream <name>', 'the stream to backfill', 'occupancy')
    .addHelpText(
      'after',
      `
The range is cut into SYNC_STEP windows (aligned on --from), each read in SYNC_PAGE_SIZE pages; every page commits
with its checkpoint. Interrupted (Ctrl-C, SIGTERM, a crash) and started again with the SAME --from and --to, it
continues at the last committed page; a different range starts over. Run again after it completed, it does nothing.
A range reaching into the last SYNC_SETTLE_DELAY is loaded up to now minus that delay.

Progress: on a terminal a live line (windows done/total, rows, rows/s, ETA); otherwise a log line every 5 s.
Exit codes as for \`sync\` (0 ok or interrupted, 1 failure, 75 locked, 77 auth, 78 config).

Examples:
  $ occupancy-sync backfill --from 2026-01-01 --to 2026-02-01
  $ occupancy-sync backfill --from 2026-01-15T00:00:00Z --to 2026-01-16T00:00:00Z --customer 6f1c0d2e-...
`,
    )
    .action(async (flags: { from: string; to: string; customer?: string; stream: string }) => {
      const from = parseInstant('--from', flags.from);
      const to = parseInstant('--to', flags.to);
      if (!(from < to)) {
        throw new ConfigError(`--from ${toIsoUtc(from)} is not before --to ${toIsoUtc(to)}. Fix: give a range with --from earlier than --to`);
      }
      await runCommand(ctx, 'backfill', {
        customer: flags.customer,
        stream: flags.stream,
        request: { mode: 'backfill', from, to },
        progress: createProgressReporter({ clock: systemClock, stream: ctx.stderr, logger: ctx.logger() }),
      });
    });
};
