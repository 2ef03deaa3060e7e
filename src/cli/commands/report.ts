import { Option } from 'commander';
import { renameSync, writeFileSync } from 'node:fs';
import { dirname, basename, join } from 'node:path';
import type { CommandModule } from '../context.ts';
import { systemClock } from '../../clock.ts';
import { selectCustomers } from '../../config.ts';
import { UsageError } from '../../errors.ts';
import { globalSecrets } from '../../logger.ts';
import { MAX_CHOSEN, SELECTION_RULES, type SelectionRule } from '../../report/select.ts';
import { REPORT_FORMATS, type ReportFormat } from '../../report/types.ts';

interface ReportFlags {
  customer?: string;
  from?: string;
  to?: string;
  tz: string;
  format?: ReportFormat;
  html?: string;
  show: SelectionRule;
  top: number;
}

function topCount(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || n < 1 || n > MAX_CHOSEN) {
    throw new UsageError(`--top ${JSON.stringify(value)}: not a whole number from 1 to ${MAX_CHOSEN}. Fix: e.g. --top 5 (more lines than ${MAX_CHOSEN} are not told apart on a chart)`);
  }
  return n;
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
    .description('Occupancy per floor space over a time range, from the reporting views: a table, CSV, JSON, or an HTML page with charts.')
    .option('--customer <id>', 'only this customer')
    .option(
      '--from <time>',
      'start (inclusive): a date or time (read in --tz when it has no offset), a time before now in whole hours, days or weeks ' +
        'such as 7d or 2w (rounded down to the hour), or now (the instant the report runs, not rounded)',
    )
    .option('--to <time>', 'end (exclusive): the same forms as --from; default now (the instant the report runs, not rounded)')
    .option('--tz <zone>', 'IANA time zone for hours, days and dates without an offset, e.g. Europe/Berlin', 'UTC')
    .addOption(new Option('--format <format>', 'output on stdout (default table; with --html only when given)').choices(REPORT_FORMATS))
    .option('--html <file>', 'also write a self-contained HTML report (charts, no network needed) to this file')
    .addOption(new Option('--show <rule>', 'which floor spaces the HTML charts draw: the busiest or emptiest by average headcount, or the biggest change between the halves of the range').choices(SELECTION_RULES).default('busiest'))
    .addOption(new Option('--top <n>', `how many floor spaces the HTML charts draw (1-${MAX_CHOSEN})`).argParser(topCount).default(MAX_CHOSEN))
    .addHelpText(
      'after',
      `
The range covers whole hours: an hour is included when its start is in [--from, --to). Without --from the report
covers the 7 days before --to. Figures come from the occupancy_hourly and occupancy_latest views (see
docs/reporting.md); "latest" is the most recent reading stored, which may be after --to. Every format ends with a
total over all floor spaces. Table and HTML show times in --tz (stated on the page); CSV and JSON keep ISO UTC.
Customer names come from CUSTOMER_NAME or the customers file's "name". There is no building column: the platform's
occupancy data names floor spaces only.
Reads only the database, opened read-only: no API access needed.

Examples:
  $ occupancy-sync report
  $ occupancy-sync report --from 2026-01-05 --to 2026-01-12 --format csv > week.csv
  $ occupancy-sync report --from 30d --format json | jq '.total'
  $ occupancy-sync report --from 14d --tz Europe/Berlin --show change --html occupancy.html
`,
    )
    .action(async (flags: ReportFlags) => {
      const [{ openForReading }, { formatReport }, { renderHtml }, { loadReport }, { resolveRange }, { validateTimeZone }] = await Promise.all([
        import('../../app/database.ts'),
        import('../../report/format.ts'),
        import('../../report/html.ts'),
        import('../../report/query.ts'),
        import('../../report/range.ts'),
        import('../../report/zone.ts'),
      ]);
      const timeZone = validateTimeZone(flags.tz);
      const range = resolveRange(flags, systemClock.now(), timeZone);
      const config = ctx.config();
      // With customers configured, a mistyped --customer is an error rather than a silently empty report.
      if (flags.customer && config.customers.length > 0) selectCustomers(config, flags.customer);
      const customerNames = new Map(config.customers.flatMap((c) => (c.name ? [[c.id, c.name] as const] : [])));
      const store = await openForReading(config.database, ctx.logger());
      try {
        const data = await loadReport(store, { ...range, customerId: flags.customer, withHourly: !!flags.html, timeZone, customerNames }, systemClock);
        if (flags.html) {
          writeAtomically(flags.html, renderHtml(data, { show: flags.show, top: flags.top }));
          ctx.stderr.write(`report: wrote ${flags.html} (${data.total.floorSpaces} floor spaces, ${data.total.readings} readings, ${range.from} to ${range.to})\n`);
        }
        if (!flags.html || flags.format) ctx.stdout.write(globalSecrets.scrub(formatReport(data, flags.format ?? 'table')));
      } finally {
        await store.close();
      }
    });
};
