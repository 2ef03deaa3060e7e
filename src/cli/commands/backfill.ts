import type { CommandModule } from '../context.ts';
import { systemClock } from '../../clock.ts';
import { UsageError } from '../../errors.ts';

export const backfillCommand: CommandModule = (program, ctx) => {
  program
    .command('backfill')
    .description(
      'Load a historical range [--from, --to) of the incremental streams, resumably, and refresh the full ones\n' +
        '(kind: full: buildings), so a backfill into an empty database leaves a complete one. A backfill keeps its own state\n' +
        '(<stream>#backfill): it never moves the incremental watermark, and can run while `sync` runs from cron.',
    )
    .requiredOption(
      '--from <time>',
      'start of the range, inclusive: 2026-01-01, 2026-01-01T06:00:00Z, 30d or 4w (thirty days or four weeks ago, rounded down to the hour), ' +
        'or now (the start of this hour, as 0h, not this instant)',
    )
    .option('--to <time>', 'end of the range, exclusive: the same forms (now: the start of this hour, as 0h, not this instant)', 'now')
    .option('--customer <id>', 'only this customer')
    .option('--stream <name>', 'only this incremental stream (default: every stream; buildings is refreshed whole)')
    .option('--restart', 'start over although a backfill of another range (or this one, complete) is stored')
    .option('--json', 'print the summary as one JSON object on stdout')
    .addHelpText(
      'after',
      `
The range is cut into SYNC_STEP windows (aligned on --from), each read in SYNC_PAGE_SIZE pages; every page commits
with its checkpoint. Interrupted (Ctrl-C, SIGTERM, a crash) and started again with the SAME --from and --to, it says
so and continues at the last committed page. Run again after it completed, it says so and does nothing (the run
that loaded it stays the last run in \`status\`). A different range is refused while a backfill is stored, unless
--restart says the stored progress may go. A range reaching into the last SYNC_SETTLE_DELAY is loaded up to now
minus that delay; a range entirely in the future is refused.

Progress: on a terminal a live line (windows done/total, rows, rows/s, ETA); otherwise a log line every 5 s.
Exit codes as for \`sync\` (0 ok or interrupted, 1 failure, 64 bad usage, 75 locked, 77 auth, 78 config).

Examples:
  $ occupancy-sync backfill --from 2026-01-01 --to 2026-02-01
  $ occupancy-sync backfill --from 30d
  $ occupancy-sync backfill --from 2026-01-15T00:00:00Z --to 2026-01-16T00:00:00Z --customer 6f1c0d2e-...
  $ occupancy-sync backfill --from 2026-01-01 --to 2026-03-01 --restart
`,
    )
    .action(async (flags: { from: string; to: string; customer?: string; stream?: string; restart?: boolean; json?: boolean }) => {
      const [{ toIsoUtc, parseInstant }, { createProgressReporter }, { runCommand }] = await Promise.all([
        import('../../time.ts'),
        import('../progress.ts'),
        import('../run-command.ts'),
      ]);
      const from = parseInstant('--from', flags.from);
      const to = parseInstant('--to', flags.to);
      if (!(from < to)) {
        throw new UsageError(`--from ${JSON.stringify(flags.from)} is not before --to ${JSON.stringify(flags.to)}. Fix: give a range with --from earlier than --to`);
      }
      const now = systemClock.now();
      const settle = ctx.config().sync.settleDelayMs;
      if (from >= now - settle) {
        throw new UsageError(
          `--from ${JSON.stringify(flags.from)} is in the future, or within SYNC_SETTLE_DELAY of now (${toIsoUtc(now)}): ` +
            'there is nothing to load yet. Fix: give a range that starts in the past (`sync` reads recent data)',
        );
      }
      await runCommand(ctx, 'backfill', {
        customer: flags.customer,
        stream: flags.stream,
        json: flags.json === true,
        request: { mode: 'backfill', from, to, restart: flags.restart === true },
        progress: flags.json ? undefined : createProgressReporter({ clock: systemClock, statusLine: ctx.statusLine, logger: ctx.logger() }),
      });
    });
};
