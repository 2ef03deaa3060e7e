import { createRequire } from 'node:module';

/**
 * drizzle-orm, loaded through its CommonJS build. Its ESM build is some 300 `.js` files, and for each one Node reads
 * drizzle's 178 KB package.json again to learn the file's module format: about half a second of every process start,
 * most of a cron `sync` that has little to do (docs/performance.md, "Steady state"). `.cjs` files need no such
 * lookup. Every runtime use of drizzle goes through this module , so there is one copy of
 * it in the process; types still come from the package's own declarations.
 */
// drizzle-kit loads db/schema through a CommonJS transform where import.meta is empty: resolve from the working
// directory there (it runs in the project).
const require = createRequire(import.meta.url ?? `${process.cwd()}/`);

type Core = typeof import('drizzle-orm');
type Migrator = typeof import('drizzle-orm/migrator');
type SqliteCore = typeof import('drizzle-orm/sqlite-core');
type PgCore = typeof import('drizzle-orm/pg-core');

const core = require('drizzle-orm') as Core;
export const { sql, getTableColumns, getTableName } = core;
export type { SQL, Column } from 'drizzle-orm';

export const migrator = (): Migrator => require('drizzle-orm/migrator') as Migrator;
/** The dialects load only when their store opens (each costs a start-up). */
export const sqliteCore = (): SqliteCore => require('drizzle-orm/sqlite-core') as SqliteCore;
export const pgCore = (): PgCore => require('drizzle-orm/pg-core') as PgCore;
