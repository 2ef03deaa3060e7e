import { defineConfig } from 'drizzle-kit';

/**
 * drizzle-kit picks the dialect from DATABASE_URL (`npm run db:generate:sqlite` / `db:generate:pg`):
 * file:... -> SQLite migrations in db/migrations/sqlite, postgres://... -> Postgres migrations in db/migrations/pg.
 * Generated migrations are committed; views and other SQL drizzle-kit cannot express go in custom migrations
 * (`drizzle-kit generate --custom --name=<what>`), in the same folders. 0008 and 0009 (the compact occupancy layout)
 * are written by hand: drizzle-kit cannot express WITHOUT ROWID, the SQLite expression index or the resumable data
 * conversion. Snapshots from 0010 on describe the real layout, so the next migration diffs against it; check what it
 * generates for those tables (0011's SQLite rebuild of occupancy_readings was corrected by hand to keep WITHOUT ROWID,
 * the expression index and the views).
 */
const url = process.env.DATABASE_URL ?? '';
const postgres = /^postgres(ql)?:\/\//.test(url);
if (!postgres && !url.startsWith('file:')) {
  throw new Error(`DATABASE_URL must be file:<path> (SQLite) or postgres://... (Postgres) for drizzle-kit, got "${url}"`);
}

export default postgres
  ? defineConfig({
      dialect: 'postgresql',
      schema: './db/schema/pg.ts',
      out: './db/migrations/pg',
      dbCredentials: { url },
    })
  : defineConfig({
      dialect: 'sqlite',
      schema: './db/schema/sqlite.ts',
      out: './db/migrations/sqlite',
      dbCredentials: { url },
    });
