import type { CommandModule } from '../context.ts';

export const syncCommand: CommandModule = (program, ctx) => {
  program
    .command('sync')
    .description(
      'Run every stream once, incrementally, for every configured customer, then exit. Made for cron and systemd timers:\n' +
        'each page of rows commits together with its checkpoint, so an interrupted or killed run resumes where it stopped.',
    )
    .option('--stream <name>', 'only this stream (buildings or occupancy)')
    .option('--customer <id>', 'only this customer (an id from CUSTOMER_ID or CUSTOMERS_FILE)')
    .option('--json', 'print the summary as one JSON object on stdout (figures, exit code, every stream)')
    .addHelpText(
      'after',
      `
Streams:
  buildings   full refresh of the buildings listing; buildings missing from a complete (unfiltered) listing
              get deleted_at, which is cleared when they return
  occupancy   observations in time windows from the watermark minus SYNC_LOOKBACK (late arrivals) to
              now minus SYNC_SETTLE_DELAY, SYNC_STEP long, SYNC_PAGE_SIZE rows a page

Output: one summary line on stdout, e.g.
  sync: 2 customers, 2 streams, 14 pages, 12,345 records, 0 failed in 3.2s
(with --json one JSON object instead) and, on stderr, one line per customer and cause of failure, and per locked
or quarantining stream.

Exit codes:
  0   success (also after SIGTERM/SIGINT: the current page was committed; the next run resumes)
  1   a customer failed (network, API, database); the others were synced; the next run resumes
  64  bad command-line usage (an unknown --stream or --customer)
  75  another run holds the lock for a customer (nothing done for it, nothing wrong)
  77  authentication failed (wrong key or secret, missing ReadPublicApi scope, a key of another customer), or
      the database refused the login in DATABASE_URL or a permission (CREATE on the schema)
  78  configuration error (the message names the variable and the fix): also an API_BASE_URL that answers
      404, a Postgres database that does not exist, a SQLite path whose directory cannot be made

Examples:
  $ occupancy-sync sync
  $ occupancy-sync sync --stream occupancy --customer 6f1c0d2e-...
  # crontab, every 5 minutes:
  */5 * * * * occupancy-sync sync >> /var/log/occupancy-sync.log 2>&1
`,
    )
    .action(async (flags: { stream?: string; customer?: string; json?: boolean }) => {
      const { runCommand } = await import('../run-command.ts');
      await runCommand(ctx, 'sync', { stream: flags.stream, customer: flags.customer, json: flags.json === true });
    });
};
