import type { CommandModule } from '../context.ts';
import { resolveConfig } from '../../config.ts';
import { UsageError } from '../../errors.ts';

export const demoCommand: CommandModule = (program, ctx) => {
  program
    .command('demo')
    .description(
      'Try it without an account: start the sandbox (a local stand-in for the platform) in this process, sync three\n' +
        'days of data for two customers into ./data/demo.db, and print what landed. `npm run demo` runs this.',
    )
    .option('--database <url>', 'where to write (file:<path> for SQLite, postgres://... for Postgres)', 'file:./data/demo.db')
    .option('--days <n>', 'days of history to sync', '3')
    .addHelpText(
      'after',
      `
Needs no API key and no configuration; nothing leaves this machine. Logs only warnings unless LOG_LEVEL is set to
debug or trace. The sandbox is deterministic (same
customers, buildings and floor spaces every time); run the demo again and the second run is incremental: it only
reads from the watermark minus SYNC_LOOKBACK onwards.

Examples:
  $ npm run demo
  $ occupancy-sync demo --database file:/tmp/demo.db --days 1
  $ occupancy-sync demo --database postgres://postgres@127.0.0.1:5432/demo
`,
    )
    .action(async (flags: { database: string; days: string }) => {
      const days = Number(flags.days);
      if (!Number.isInteger(days) || days < 1 || days > 60) {
        throw new UsageError(`--days ${JSON.stringify(flags.days)}: must be a whole number from 1 to 60. Fix: e.g. --days 3`);
      }
      const database = resolveConfig({ DATABASE_URL: flags.database }).database;
      const config = ctx.config();
      // The summary is the demo's output; routine info lines would bury it unless LOG_LEVEL asks for detail.
      const logger = config.logLevel === 'info' ? ctx.logger().child({}, { level: 'warn' }) : ctx.logger();
      const [{ runDemo, formatDemo }, { printReport }, { invocation }] = await Promise.all([
        import('../../app/demo.ts'),
        import('../run-command.ts'),
        import('../invocation.ts'),
      ]);
      const result = await runDemo({ config, database, logger, signal: ctx.signal, days });
      printReport(ctx, 'demo', result.report);
      ctx.stdout.write(formatDemo(result, flags.database, invocation()));
    });
};
