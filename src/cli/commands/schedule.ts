import type { CommandModule } from '../context.ts';
import { requireApi, selectCustomers } from '../../config.ts';
import { ExitCode } from '../../errors.ts';

export const scheduleCommand: CommandModule = (program, ctx) => {
  program
    .command('schedule')
    .description(
      'Run as a daemon: sync every stream for every customer on the SYNC_CRON schedule (default "*/5 * * * *").\n' +
        'A tick that comes while the previous run is still going is skipped (and logged), never run in parallel.',
    )
    .option('--now', 'also run once right away, before the first tick')
    .option('--customer <id>', 'only this customer')
    .option('--stream <name>', 'only this stream')
    .addHelpText(
      'after',
      `
SIGTERM or SIGINT: the run in progress finishes its current page, commits it, records the run as interrupted, and
the process exits 0; the next start resumes from that page. A second signal exits at once.
Each run prints its summary line (as \`sync\` does); a failed run is logged and the daemon keeps going.
Runs take the same per-customer locks as \`sync\`, so a cron-started \`sync\` and this daemon never overlap either.
The API clients live as long as the daemon: a token is reused across runs until it nears expiry.

Examples:
  $ occupancy-sync schedule
  $ SYNC_CRON="*/15 * * * *" occupancy-sync schedule --now
  # systemd: ExecStart=/usr/bin/occupancy-sync schedule, Restart=on-failure, KillSignal=SIGTERM
`,
    )
    .action(async (flags: { now?: boolean; customer?: string; stream?: string }) => {
      const [{ startScheduler, validateCron }, { openDatabase, selectStreams }, { createScheduledSync }] = await Promise.all([
        import('../../sync/scheduler.ts'),
        import('../../sync/runner.ts'),
        import('../../sync/scheduled.ts'),
      ]);
      const config = ctx.config();
      validateCron(config.sync.cron);
      requireApi(config);
      const customers = selectCustomers(config, flags.customer);
      const streams = selectStreams(flags.stream);
      const logger = ctx.logger();
      const store = await openDatabase(config.database);
      const scheduled = createScheduledSync({ config, store, logger, customers, streams, stdout: ctx.stdout });
      try {
        const scheduler = startScheduler({
          cron: config.sync.cron,
          logger,
          signal: ctx.signal,
          runAtStart: flags.now,
          run: async (signal) => {
            await scheduled.run(signal);
          },
        });
        await scheduler.done;
        ctx.exitCode = ExitCode.OK;
      } finally {
        await scheduled.close();
        await store.close();
      }
    });
};
