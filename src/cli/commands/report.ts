import { Option } from 'commander';
import { renameSync, writeFileSync } from 'node:fs';
import { dirname, basename, join } from 'node:path';
import type { CommandModule } from '../context.ts';
import { systemClock } from '../../clock.ts';
import { selectCustomers } from '../../config.ts';
import { ConfigError } from '../../errors.ts';
import { globalSecrets } from '../../logger.ts';
import { openStore } from '../../store/index.ts';
import { formatReport } from '../../report/format.ts';
import { renderHtml } from '../../report/html.ts';
import { loadReport } from '../../report/query.ts';
import { resolveRange } from '../../report/range.ts';
import { REPORT_FORMATS, type ReportFormat } from '../../report/types.ts';

interface ReportFlags {
  customer?: string;
  from?: string;
  to?: string;
  format?: ReportFormat;
  html?: string;
}

/** Written next to the target and renamed over it, so a reader never sees half a report. */
function writeAtomically(path: string, text: string): void {
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  try {
    writeFileSync(temp, text);
    renameSync(temp, path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new ConfigError(`--html ${JSON.stringify(path)}: cannot write the file (${code}). Fix: choose a writable path in an existing directory`, {
      cause: error,
    });
  }
}

export const reportCommand: CommandModule = (program, ctx) => {
  program
    .command('report')
    .description('Occupancy per floor space over a time range, from the reporting views: a table, CSV, JSON, or an HTML page with charts.')
    .option('--customer <id>', 'only this customer')
    .option('--from <time>', 'start (inclusive): ISO date or time (UTC unless an offset is given), or a duration before now such as 7d')
    .option('--to <time>', 'end (exclusive), same forms as --from; default now')
    .addOption(new Option('--format <format>', 'output on stdout (default table; with --html only when given)').choices(REPORT_FORMATS))
    .option('--html <file>', 'also write a self-contained HTML report (charts, no network needed) to this file')
    .addHelpText(
      'after',
      `
The range covers whole UTC hours: an hour is included when its start is in [--from, --to). Without --from the
report covers the 7 days before --to. Figures come from the occupancy_hourly and occupancy_latest views (see
docs/reporting.md); "latest" is the most recent reading stored, which may be after --to.
Building is "unknown": the platform's occupancy data names floor spaces only, not their building.
Reads only the database: no API access needed.

Examples:
  $ occupancy-sync report
  $ occupancy-sync report --from 2026-01-05 --to 2026-01-12 --format csv > week.csv
  $ occupancy-sync report --customer 6f1c... --from 30d --format json | jq '.floorSpaces[0]'
  $ occupancy-sync report --from 14d --html occupancy.html
`,
    )
    .action(async (flags: ReportFlags) => {
      const config = ctx.config();
      // With customers configured, a mistyped --customer is an error rather than a silently empty report.
      if (flags.customer && config.customers.length > 0) selectCustomers(config, flags.customer);
      const range = resolveRange(flags, systemClock.now());
      const store = await openStore(config.database, { logger: ctx.logger() });
      try {
        await store.migrate();
        const data = await loadReport(store, { ...range, customerId: flags.customer, withHourly: !!flags.html }, systemClock);
        if (flags.html) {
          writeAtomically(flags.html, renderHtml(data));
          const readings = data.floorSpaces.reduce((n, r) => n + r.readings, 0);
          ctx.stderr.write(`report: wrote ${flags.html} (${data.floorSpaces.length} floor spaces, ${readings} readings, ${range.from} to ${range.to})\n`);
        }
        if (!flags.html || flags.format) ctx.stdout.write(globalSecrets.scrub(formatReport(data, flags.format ?? 'table')));
      } finally {
        await store.close();
      }
    });
};
