import { redactUrl } from '../../net.ts';
import type { CommandModule } from '../context.ts';


export const migrateCommand: CommandModule = (program, ctx) => {
  program
    .command('migrate')
    .description(
      'Apply pending database migrations to DATABASE_URL (SQLite file or Postgres), bring the tables the definitions ' +
        'file declares (DEFINITIONS_FILE, or ./occupancy-sync.streams.yaml) in step with it, and print what was applied. ' +
        'Safe to run repeatedly and from several processes at once; every other command also migrates on start, and ' +
        'every sync brings the declared tables in step.',
    )
    .addHelpText(
      'after',
      `
Examples:
  $ occupancy-sync migrate
  $ DATABASE_URL=file:./data/occupancy.db occupancy-sync migrate
  $ DATABASE_URL=postgres://sync@db.example.com:5432/reporting?schema=occupancy occupancy-sync migrate
  $ DEFINITIONS_FILE=./occupancy-sync.streams.yaml occupancy-sync migrate

Exit codes: 0 applied or already up to date, 1 the database failed, 77 the database refused the login or a
permission (CREATE on the schema), 78 bad DATABASE_URL (a database that does not exist, a SQLite path that cannot be
created) or DEFINITIONS_FILE, or a declared table changed in a way its stored table cannot follow (one line per
change, with the fix; docs/tables.md).`,
    )
    .action(async () => {
      const config = ctx.config();
      const where = `${config.database.dialect} ${redactUrl(config.database.url)}`;
      const [{ openStore }, { migrationDetailAtDebug }, { loadStreams }] = await Promise.all([
        import('../../store/index.ts'),
        import('../../app/database.ts'),
        import('../../app/streams.ts'),
      ]);
      // The definitions are read before the database is touched: a broken file changes nothing.
      const tables = loadStreams(config).streams.flatMap((s) => (s.table ? [s.table] : []));
      // What was applied is printed below; the store's own lines about it would say it twice.
      const store = await openStore(config.database, { logger: migrationDetailAtDebug(ctx.logger()) });
      try {
        const applied = await store.migrate();
        // Printed before the declared tables are looked at: a change refused there leaves these applied.
        if (applied.length > 0) {
          const noun = applied.length === 1 ? 'migration' : 'migrations';
          ctx.stdout.write(`Applied ${applied.length} ${noun} to ${where}:\n${applied.map((n) => `  ${n}\n`).join('')}`);
        }
        const steps = tables.length > 0 ? await store.declareTables(tables) : [];
        if (steps.length > 0) {
          const noun = steps.length === 1 ? 'step' : 'steps';
          ctx.stdout.write(`Applied ${steps.length} declared-table ${noun} to ${where}:\n${steps.map((t) => `  ${t.table} step ${t.step}: ${t.change}\n`).join('')}`);
        }
        if (applied.length === 0 && steps.length === 0) ctx.stdout.write(`Database is up to date (${where}).\n`);
      } finally {
        await store.close();
      }
    });
};
