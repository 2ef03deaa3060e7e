import type { CommandModule } from '../context.ts';
import type { Pruned } from '../../app/retention.ts';
import { systemClock } from '../../clock.ts';

/**
 * `prune`: one retention pass (RUN_HISTORY_RETENTION, READINGS_RETENTION), as the daemons run every hour, for those who
 * run occupancy-sync from cron or systemd timers: without it their sync_runs and readings grow for ever.
 */

/**
 * The first local date that starts after the cutoff in every zone (offsets from -12 to +14 hours): a rebuild of the
 * dates before it takes every pruned hour out, and computes the hours after the cutoff it reaches as they are kept.
 */
function rebuildTo(before: string): string {
  return new Date(Date.parse(before) + 38 * 3_600_000).toISOString().slice(0, 10);
}

function summary(pruned: Pruned): string {
  const lines: string[] = [];
  const { runs, readings } = pruned;
  lines.push(runs ? `Runs: deleted ${runs.deleted} that finished before ${runs.before} (RUN_HISTORY_RETENTION).` : 'Runs: all kept (RUN_HISTORY_RETENTION is off).');
  if (!readings) lines.push(pruned.stopped ? 'Readings: none deleted (stopped before them).' : 'Readings: all kept (READINGS_RETENTION is off, the default).');
  else {
    const dropped = readings.partitions.length > 0 ? `dropped ${readings.partitions.length} partition(s) (${readings.partitions.join(', ')}) and ` : '';
    lines.push(`Readings: ${dropped}deleted ${readings.rows} reading(s) observed before ${readings.before} (READINGS_RETENTION).`);
    if (readings.rows > 0 || readings.partitions.length > 0) {
      lines.push(
        `The time-weighted aggregates of those hours stay (reports still show them); \`occupancy-sync aggregates rebuild --to ${rebuildTo(readings.before)}\` removes them too (docs/reporting.md).`,
      );
    }
  }
  if (pruned.stopped) lines.push('Stopped by a signal: what went stays gone, the next pass deletes the rest.');
  return `${lines.join('\n')}\n`;
}

export const pruneCommand: CommandModule = (program, ctx) => {
  program
    .command('prune')
    .description(
      'Delete, once, the finished runs older than RUN_HISTORY_RETENTION (default 28d) and the readings observed longer ago ' +
        'than READINGS_RETENTION (default off), as serve and schedule do every hour by themselves: for cron and systemd timers.',
    )
    .option('--json', 'print what was deleted as one JSON object')
    .addHelpText(
      'after',
      `
Runs: the latest run and the latest success of every stream always stay. Readings: on Postgres each month wholly
older than the cutoff is its partition dropped, the month at the edge deleted row by row; on SQLite row by row, 5,000
rows a statement. Safe while syncs and daemons run (docs/operations.md, "Retention"). The time-weighted aggregates
keep their rows (reports still show those hours) until \`aggregates rebuild --to DATE\` of that range.

Examples:
  $ occupancy-sync prune
  $ READINGS_RETENTION=400d occupancy-sync prune --json
  # crontab: every night at 03:15
  15 3 * * * READINGS_RETENTION=400d occupancy-sync prune

SIGTERM or SIGINT stops it between two batches of 5,000 rows: what went stays gone, the next pass deletes the rest.

Exit codes: 0 done (also with nothing to delete, and when a signal stopped it), 1 the database failed,
75 another process holds the database, 77 the database refused the login or a permission, 78 a bad
RUN_HISTORY_RETENTION, READINGS_RETENTION or DATABASE_URL (a database that does not exist, a path that cannot be made).`,
    )
    .action(async (flags: { json?: boolean }) => {
      const config = ctx.config();
      const [{ openForWriting }, { pruneOnce }] = await Promise.all([import('../../app/database.ts'), import('../../app/retention.ts')]);
      const store = await openForWriting(config.database, ctx.logger(), ctx.signal);
      try {
        const pruned = await pruneOnce(
          { store, retentionMs: config.sync.runHistoryRetentionMs, readingsRetentionMs: config.sync.readingsRetentionMs, clock: systemClock },
          () => ctx.signal.aborted,
        );
        ctx.stdout.write(flags.json ? `${JSON.stringify(pruned)}\n` : summary(pruned));
      } finally {
        await store.close();
      }
    });
};
