import type { Command } from 'commander';
import { UsageError } from '../../errors.ts';
import type { RebuiltBuilding } from '../../store/types.ts';
import { END_READING, FIRST_READING } from '../../time.ts';
import { parseIsoDate } from '../../zone-offsets.ts';
import type { CliContext, CommandModule } from '../context.ts';

/**
 * `aggregates rebuild`: the time-weighted aggregates (occupancy_buckets, calendar_days) recomputed from the readings,
 * the source of truth, for any range of local dates, any building or all. Every commit keeps them already; this is
 * for after a retention of aggregates by hand, a restore, or to check them (docs/reporting.md).
 */

interface RebuildFlags {
  customer?: string;
  building?: string;
  from?: string;
  to?: string;
  json?: boolean;
}

const dayBefore = (iso: string) => new Date(Date.parse(iso) - 86_400_000).toISOString().slice(0, 10);

function localDate(flag: string, text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  if (parseIsoDate(text) === undefined) throw new UsageError(`${flag} ${JSON.stringify(text)}: not a date in the form YYYY-MM-DD that exists. Fix: write a local date such as 2026-03-01`);
  // The years a reading may have (src/time.ts; the store refuses others), a day either side for the buildings' zones.
  if (text < dayBefore(FIRST_READING) || text > END_READING.slice(0, 10)) throw new UsageError(`${flag} ${text}: outside the years readings are kept for (1970 to 2199). Fix: give a local date in them, or leave ${flag} out for the ${flag === '--from' ? 'first' : 'last'} reading`);
  return text;
}

function line(b: RebuiltBuilding): string {
  const name = b.buildingId === '' ? '(no building)' : b.buildingName ? `${b.buildingName} (${b.buildingId})` : b.buildingId;
  const what = b.whole ? 'all' : 'range';
  const why = b.change ? `; ${b.change}` : '';
  return `  ${b.customerId}  ${name}: ${what}, ${b.buckets} bucket(s) of ${b.spaces} floor space(s), in ${b.zone} (zone: ${b.zoneSource})${why}\n`;
}

async function rebuild(ctx: CliContext, flags: RebuildFlags): Promise<void> {
  const from = localDate('--from', flags.from);
  const to = localDate('--to', flags.to);
  if (from && to && !(from < to)) throw new UsageError(`--to ${to}: not after --from ${from}. Fix: give a later --to (the range is [from, to), local dates of each building)`);
  const config = ctx.config();
  const [{ selectCustomers }, { openForWriting }, { loadStreams }, { rebuildAggregates }, { updatePlannerStatisticsAfterRun }, { checkBuildingFlag, checkCustomerFlag }] = await Promise.all([
    import('../../config.ts'),
    import('../../app/database.ts'),
    import('../../app/streams.ts'),
    import('../../app/aggregates.ts'),
    import('../../app/planner-statistics.ts'),
    import('../known-names.ts'),
  ]);
  let customerIds: string[];
  if (flags.customer) customerIds = config.customers.length > 0 ? selectCustomers(config, flags.customer).map((c) => c.id) : [flags.customer];
  else if (config.customers.length > 0) customerIds = config.customers.map((c) => c.id);
  else throw new UsageError('no customer is configured and --customer is missing. Fix: name the customer with --customer <id>');
  const streams = loadStreams(config).streams;
  const store = await openForWriting(config.database, ctx.logger(), ctx.signal);
  try {
    // A mistyped --customer or --building is said before any refresh or rebuild, not after them.
    await checkCustomerFlag(config, store, flags.customer, 'floor space');
    await checkBuildingFlag(store, customerIds, flags.building);
    if (!flags.json) ctx.stdout.write(`Rebuilding the time-weighted aggregates from the readings${from || to ? ` for local dates [${from ?? 'first'}, ${to ?? 'last'})` : ''}:\n`);
    const rebuilt = await rebuildAggregates({
      store,
      config,
      streams,
      customerIds,
      ...(flags.building !== undefined && { buildingId: flags.building }),
      ...(from && { from }),
      ...(to && { to }),
      onBuilding: (b) => flags.json || ctx.stdout.write(line(b)),
    });
    await updatePlannerStatisticsAfterRun(store, ctx.logger());
    if (flags.json) ctx.stdout.write(`${JSON.stringify({ buildings: rebuilt }, null, 2)}\n`);
    else ctx.stdout.write(rebuilt.length === 0 ? 'No building has readings or aggregates yet: run `occupancy-sync sync` first.\n' : `Done: ${rebuilt.length} building(s), ${rebuilt.reduce((n, b) => n + b.buckets, 0)} bucket(s).\n`);
  } finally {
    await store.close();
  }
}

export const aggregatesCommand: CommandModule = (program, ctx) => {
  const group: Command = program
    .command('aggregates')
    .description('The time-weighted aggregates (occupancy_buckets, calendar_days): poll pages invalidate them, runs refresh them, deliveries keep theirs; rebuild them from the readings.')
    .addHelpText('after', '\nExamples:\n  $ occupancy-sync aggregates rebuild\n  $ occupancy-sync aggregates rebuild --from 2026-03-01 --to 2026-04-01 --building b-7\n');

  group
    .command('rebuild')
    .description(
      'Recompute the time-weighted aggregates from the stored readings: all of them, or the local dates [--from, --to) of\n' +
        "each building's zone, for every building or one. Uses WORKING_TIME_FILE and the streams' max hold as configured\n" +
        'now; a building configured otherwise than its aggregates were computed is rebuilt whole. What poll pages left\n' +
        'stale (a killed run) is refreshed first. Safe while syncs run.',
    )
    .option('--from <date>', 'first local date to recompute (YYYY-MM-DD; default: the first reading)')
    .option('--to <date>', 'local date to stop before (YYYY-MM-DD; default: after the last reading)')
    .option('--building <id>', "only this building (its id; '' for the floor spaces of no known building)")
    .option('--customer <id>', 'only this customer (default: every configured customer)')
    .option('--json', 'print JSON ({ buildings: [...] })')
    .addHelpText(
      'after',
      `
Examples:
  $ occupancy-sync aggregates rebuild
  $ occupancy-sync aggregates rebuild --from 2026-03-01 --to 2026-04-01
  $ occupancy-sync aggregates rebuild --building b-7 --json

Exit codes: 0 rebuilt, 1 the database failed (nothing of a building's rebuild is kept half-done), 64 bad flags
(a date that does not exist, --to not after --from, an unknown customer or building), 78 configuration error
(WORKING_TIME_FILE, DATABASE_URL).`,
    )
    .action((flags: RebuildFlags) => rebuild(ctx, flags));
};
