import type { CommandModule } from '../context.ts';
import { systemClock } from '../../clock.ts';
import { globalSecrets } from '../../logger.ts';

export const statusCommand: CommandModule = (program, ctx) => {
  program
    .command('status')
    .description('Show, per customer and stream, the watermark, how far it lags behind now, and the last run and its outcome.')
    .option('--json', 'print JSON (an array of objects) instead of a table')
    .option('--customer <id>', 'only this customer')
    .addHelpText(
      'after',
      `
Columns: WATERMARK (everything before it is stored; for buildings, the start of the last complete listing),
LAG (now minus the watermark), LAST RUN (start and mode: incremental, backfill or full), OUTCOME (succeeded,
failed, interrupted or running; "window in flight" means the next run resumes a window at a page cursor).
Backfill state is listed as <stream>#backfill with its range (no watermark: its progress is the window in flight).
Readings stored with a status that is neither CurrentlyOccupied nor Unoccupied (a stream without the value map its
API needs) are counted per status below the table, with the map to add (in --json: "unmapped" on the streams of
readings). Floor spaces whose time-weighted aggregates poll pages or deliveries made stale and no refresh has
recomputed yet are counted per customer below the table (in --json: "aggregatesPending" on the streams of readings):
the views lag those readings until the run's next refresh (at most 15 s of commits) or its end, the receiver's (a
second after a delivery), \`occupancy-sync report\` or \`aggregates rebuild\`. Reads only the database: no API access needed.

Examples:
  $ occupancy-sync status
  $ occupancy-sync status --json | jq '.[] | select(.lagMs > 3600000)'
`,
    )
    .action(async (flags: { json?: boolean; customer?: string }) => {
      const config = ctx.config();
      const [{ openForReading }, { buildStatus, formatStatus, withCompleteness, withPendingAggregates, withUnmapped }, { runDataChecks }, { loadStreams }, { CANONICAL_STATUSES }] = await Promise.all([
        import('../../app/database.ts'),
        import('../status.ts'),
        import('../../app/data-checks.ts'),
        import('../../app/streams.ts'),
        import('../../statuses.ts'),
      ]);
      // The definitions in force name the streams the data checks look at; a broken file stops here, first.
      const { streams } = loadStreams(config);
      const store = await openForReading(config.database, ctx.logger());
      try {
        await (await import('../known-names.ts')).checkCustomerFlag(config, store, flags.customer);
        const [states, runs, unmapped, pending] = await Promise.all([
          store.listStates(flags.customer),
          store.lastRuns(flags.customer),
          store.unmappedStatuses(CANONICAL_STATUSES, flags.customer),
          store.pendingAggregates(flags.customer),
        ]);
        const readings = new Set(streams.filter((s) => s.sink === 'occupancy').map((s) => s.name));
        const customers = config.customers.filter((c) => flags.customer === undefined || c.id === flags.customer);
        const checks = await runDataChecks({ store, streams, customers, settings: config.sync, now: systemClock.now() });
        // A fan-out stream's watermark is its lowest partition's among the parents still listed.
        const parents = new Map<string, Set<string>>();
        for (const stream of streams) {
          if (!stream.partition) continue;
          for (const customer of customers) {
            const listed = await store.listedValues(stream.partition.parentSink, stream.partition.parentKey, customer.id);
            parents.set(`${customer.id}\u0000${stream.name}`, new Set(listed));
            parents.set(`${customer.id}\u0000${stream.name}#backfill`, new Set(listed));
          }
        }
        const built = withCompleteness(buildStatus(states, runs, systemClock.now(), parents), checks.completeness);
        const entries = withPendingAggregates(withUnmapped(built, unmapped, readings), pending, readings).filter(
          (e) => flags.customer === undefined || e.customerId === flags.customer,
        );
        const text = flags.json ? `${JSON.stringify(entries, null, 2)}\n` : formatStatus(entries, checks.reconciliation, unmapped, pending);
        ctx.stdout.write(globalSecrets.scrub(text));
      } finally {
        await store.close();
      }
    });
};
