import { systemClock } from '../../clock.ts';
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
      const [{ startScheduler, validateCron }, { openForWriting }, { loadStreams, selectStreams }, { createSyncPass }, { summaryLine }, { exitCodeOf }] =
        await Promise.all([
          import('../../app/scheduler.ts'),
          import('../../app/database.ts'),
          import('../../app/streams.ts'),
          import('../../app/sync-pass.ts'),
          import('../../app/summary.ts'),
          import('../exit-code.ts'),
        ]);
      const [{ startRetention }, { parseDocumentSource }] = await Promise.all([import('../../app/retention.ts'), import('../../api/documents.ts')]);
      const config = ctx.config();
      validateCron(config.sync.cron);
      requireApi(config);
      const customers = selectCustomers(config, flags.customer);
      const streams = selectStreams(flags.stream, undefined, loadStreams(config, { parseDocument: parseDocumentSource }).streams);
      const logger = ctx.logger();
      const store = await openForWriting(config.database);
      const pass = createSyncPass({ config, store, logger, customers, streams });
      const retention = startRetention({ store, retentionMs: config.sync.runHistoryRetentionMs, readingsRetentionMs: config.sync.readingsRetentionMs, clock: systemClock, logger });
      try {
        const scheduler = startScheduler({
          cron: config.sync.cron,
          logger,
          signal: ctx.signal,
          runAtStart: flags.now,
          run: async (signal) => {
            // The pass logs its problems; stdout gets the summary line, as `sync` prints it.
            const result = await pass.run(signal);
            ctx.stdout.write(`${summaryLine('sync', result)}\n`);
            const code = exitCodeOf(result.outcomes);
            if (code !== ExitCode.OK) logger.warn({ exitCode: code }, 'scheduled run did not fully succeed; the next tick retries');
          },
        });
        await scheduler.done;
        ctx.exitCode = ExitCode.OK;
      } finally {
        await retention.stop();
        await pass.close();
        await store.close();
      }
    });
};
