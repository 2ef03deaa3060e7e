import { Option } from 'commander';
import { renameSync, writeFileSync } from 'node:fs';
import { dirname, basename, join } from 'node:path';
import type { CommandModule } from '../context.ts';
import { systemClock } from '../../clock.ts';
import { UsageError } from '../../errors.ts';
import { globalSecrets } from '../../logger.ts';
import { REPORT_FORMATS, type ReportFormat } from '../../report/types.ts';

interface ReportFlags {
  customer?: string;
  from?: string;
  to?: string;
  tz: string;
  format?: ReportFormat;
  html?: string;
  allHours?: boolean;
}

/** Written next to the target and renamed over it, so a reader never sees half a report. */
function writeAtomically(path: string, text: string): void {
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  try {
    writeFileSync(temp, text);
    renameSync(temp, path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new UsageError(`--html ${JSON.stringify(path)}: cannot write the file (${code}). Fix: choose a writable path in an existing directory`, {
      cause: error,
    });
  }
}

export const reportCommand: CommandModule = (program, ctx) => {
  program
    .command('report')
    .description(
      'Time-weighted utilization by building > floor > floor space, in each building\'s working hours: coverage, % time used, people, utilization against capacity. A table, CSV, JSON, or an HTML page with heat maps.',
    )
    .option('--customer <id>', 'only this customer')
    .option(
      '--from <date>',
      'first local date: a date such as 2026-03-23, today, or a time before now such as 7d or 2w (the date it falls on in --tz)',
    )
    .option('--to <date>', 'the local date after the last one (exclusive): the same forms as --from; default today, so the report ends with yesterday (now: up to now, today so far included)')
    .option('--tz <zone>', 'IANA time zone whose today and relative dates (7d) count, e.g. Europe/Berlin (the figures are always in each building\'s own zone)', 'UTC')
    .option('--all-hours', 'all hours of each day instead of the working hours of each building\'s calendar (WORKING_TIME_FILE)')
    .addOption(new Option('--format <format>', 'output on stdout (default table; with --html only when given)').choices(REPORT_FORMATS))
    .option('--html <file>', 'also write a self-contained HTML report (portfolio > building > floor, heat maps, no network needed) to this file')
    .addHelpText(
      'after',
      `
The report covers the local dates [--from, --to) of each building: 2026-03-23 is the 23rd in Berlin for a building
in Berlin and in Kolkata for one in Kolkata. Without --from, the 7 dates before --to. Figures come from the
time-weighted views (space_days, floor_days, building_days, portfolio_days, building_hours, floor_hours; see
docs/reporting.md): each reading's status and headcount hold until the next reading (at most the stream's max hold),
time nobody measured is unknown, never vacant. Working hours are each building's (WORKING_TIME_FILE; default Monday
to Friday 08:00-18:00); --all-hours reports whole days.
  COVERAGE   time measured / working time (all hours: / time); below 80% it is flagged with "!"
  USED       % time used: time occupied / time measured
  AVG, PEAK  people on average (time-weighted) and at most, where sensors count people
  UTIL       average people / capacity, over floor spaces whose capacity is known; PEAK UTIL: the fullest floor space
Customer names come from CUSTOMER_NAME or the customers file's "name".
Reads only the database: no API access needed. The time-weighted aggregates that poll pages left stale (a run
still going, or killed before its end) are refreshed first, so the figures are current; a user who may only read
gets the report with one line on stderr saying how far it lags.

Examples:
  $ occupancy-sync report
  $ occupancy-sync report --from 2026-03-23 --to 2026-03-30 --format csv > week.csv
  $ occupancy-sync report --from 30d --all-hours --format json | jq '.portfolios'
  $ occupancy-sync report --from 14d --html utilization.html
`,
    )
    .action(async (flags: ReportFlags) => {
      const [{ openForReading, openForWriting }, { formatReport }, { renderHtml }, { loadReport }, { resolveRange }, { validateTimeZone }, { calendarDriftForReading, driftLine, refreshForReading, staleLine }, { loadStreams }] = await Promise.all([
        import('../../app/database.ts'),
        import('../../report/format.ts'),
        import('../../report/html.ts'),
        import('../../report/query.ts'),
        import('../../report/range.ts'),
        import('../../report/zone.ts'),
        import('../../app/aggregates.ts'),
        import('../../app/streams.ts'),
      ]);
      if (flags.html !== undefined && flags.html.trim() === '') throw new UsageError('--html "": names no file. Fix: give the file to write, e.g. --html report.html');
      const timeZone = validateTimeZone(flags.tz);
      const range = resolveRange(flags, systemClock.now(), timeZone);
      const config = ctx.config();
      const customerNames = new Map(config.customers.flatMap((c) => (c.name ? [[c.id, c.name] as const] : [])));
      const store = await openForReading(config.database, ctx.logger());
      try {
        // A mistyped --customer is an error, said before any refresh, rather than a silently empty report.
        await (await import('../known-names.ts')).checkCustomerFlag(config, store, flags.customer, 'floor space');
        // What poll pages left stale is refreshed first, so the report is current (docs/reporting.md).
        const { streams } = loadStreams(config);
        const openWriter = () => openForWriting(config.database, ctx.logger());
        const stale = await refreshForReading({ reader: store, openWriter, config, streams, customerId: flags.customer, logger: ctx.logger() });
        if (stale.length > 0) ctx.stderr.write(`report: ${staleLine(stale)}\n`);
        const drift = await calendarDriftForReading({ reader: store, config, customerIds: flags.customer ? [flags.customer] : await store.customersHeld() });
        if (drift.length > 0) ctx.stderr.write(`report: ${driftLine(drift)}\n`);
        const data = await loadReport(store, { ...range, customerId: flags.customer, scope: flags.allHours ? 'all' : 'working', customerNames }, systemClock);
        if (flags.html) {
          writeAtomically(flags.html, renderHtml(data));
          const spaces = data.portfolios.reduce((n, p) => n + p.spaces, 0);
          ctx.stderr.write(`report: wrote ${flags.html} (${data.buildings.length} buildings, ${spaces} floor spaces, ${range.from} to ${range.to})\n`);
        }
        if (!flags.html || flags.format) ctx.stdout.write(globalSecrets.scrub(formatReport(data, flags.format ?? 'table')));
      } finally {
        await store.close();
      }
    });
};
