import { redactUrl } from '../../net.ts';
import type { CommandModule } from '../context.ts';


export const migrateCommand: CommandModule = (program, ctx) => {
  program
    .command('migrate')
    .description(
      'Apply pending database migrations to DATABASE_URL (SQLite file or Postgres) and print what was applied. ' +
        'Safe to run repeatedly and from several processes at once; every other command also migrates on start.',
    )
    .addHelpText(
      'after',
      `
Examples:
  $ occupancy-sync migrate
  $ DATABASE_URL=file:./data/occupancy.db occupancy-sync migrate
  $ DATABASE_URL=postgres://sync@db.example.com:5432/reporting?schema=occupancy occupancy-sync migrate

Exit codes: 0 applied or already up to date, 1 the database refused, 78 bad DATABASE_URL.`,
    )
    .action(async () => {
      const config = ctx.config();
      const where = `${config.database.dialect} ${redactUrl(config.database.url)}`;
      const [{ openStore }, { migrationDetailAtDebug }] = await Promise.all([import('../../store/index.ts'), import('../../app/database.ts')]);
      // What was applied is printed below; the store's own lines about it would say it twice.
      const store = await openStore(config.database, { logger: migrationDetailAtDebug(ctx.logger()) });
      try {
        const applied = await store.migrate();
        if (applied.length === 0) {
          ctx.stdout.write(`Database is up to date (${where}).\n`);
        } else {
          const noun = applied.length === 1 ? 'migration' : 'migrations';
          ctx.stdout.write(`Applied ${applied.length} ${noun} to ${where}:\n${applied.map((n) => `  ${n}\n`).join('')}`);
        }
      } finally {
        await store.close();
      }
    });
};
