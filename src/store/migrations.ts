import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { MigrationMeta } from 'drizzle-orm/migrator';
import { migrator } from '../../db/schema/drizzle.ts';
import type { Dialect } from '../config.ts';
import { StoreError } from '../errors.ts';
import { COMPATIBILITY_FLAGS, type CompatibilityFlags } from './compatibility.ts';

/**
 * The schema's history and its repeatable part, read from the files, located relative to this module (not the working
 * directory) so the CLI works from any directory:
 * - versioned migrations, drizzle-kit's `db/migrations/<dialect>/NNNN_*.sql`: applied once each, in order, and never
 *   edited once shipped (databases have applied them). Bookkeeping uses drizzle's own `__drizzle_migrations` layout.
 * - repeatable scripts, `db/views/<dialect>.sql` (as Flyway's `R__` scripts): the one definition of the views, applied
 *   again whenever their text changes (a checksum per script) or a versioned migration was applied after them.
 */
export const MIGRATIONS_TABLE = '__drizzle_migrations';
export const REPEATABLE_TABLE = '__repeatable_migrations';
/** The steps applied to declared tables (docs/tables.md): a table's history, as the migrations table is ours. */
export const DECLARED_TABLE = '__declared_tables';

const BREAKPOINT = '--> statement-breakpoint';

function dbFolder(sub: string): string {
  return fileURLToPath(new URL(`../../db/${sub}`, import.meta.url));
}

export function migrationsFolder(dialect: Dialect): string {
  return dbFolder(`migrations/${COMPATIBILITY_FLAGS[dialect].files}`);
}

export interface NamedMigration extends MigrationMeta {
  /** drizzle-kit's tag, e.g. `0000_tables`: what `occupancy-sync migrate` prints. */
  name: string;
}

export function loadMigrations(dialect: Dialect): NamedMigration[] {
  const folder = migrationsFolder(dialect);
  try {
    const journal = JSON.parse(readFileSync(`${folder}/meta/_journal.json`, 'utf8')) as {
      entries: Array<{ tag: string; when: number }>;
    };
    const names = new Map(journal.entries.map((e) => [e.when, e.tag]));
    return migrator().readMigrationFiles({ migrationsFolder: folder }).map((m) => ({
      ...m,
      name: names.get(m.folderMillis) ?? String(m.folderMillis),
    }));
  } catch (error) {
    throw new StoreError(`cannot read the ${dialect} migrations in ${folder}: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

/** Migrations newer than the last applied one (drizzle's rule: compare creation times, not hashes). */
export function pending(migrations: NamedMigration[], lastAppliedMillis: number | undefined): NamedMigration[] {
  return migrations.filter((m) => lastAppliedMillis === undefined || lastAppliedMillis < m.folderMillis);
}

export interface RepeatableScript {
  /** Its path in the package, e.g. `db/views/pg.sql`: its key in the bookkeeping and its name in messages. */
  name: string;
  /** SHA-256 of the file's text. */
  checksum: string;
  /** The statements that (re)create what it defines, for this dialect. */
  statements: string[];
}

/** The repeatable scripts of a dialect: today one, its views (from `folder`, by default the package's db/views). */
export function loadRepeatable(dialect: Dialect, folder = dbFolder('views')): RepeatableScript[] {
  const flags = COMPATIBILITY_FLAGS[dialect];
  const name = `db/views/${flags.files}.sql`;
  const path = join(folder, `${flags.files}.sql`);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new StoreError(`cannot read the ${dialect} views in ${path}: ${(error as Error).message}`, { cause: error });
  }
  return [{ name, checksum: createHash('sha256').update(text).digest('hex'), statements: viewStatements(text, flags) }];
}

/**
 * A views script's statements as this dialect re-applies them: each `CREATE VIEW name AS` becomes `CREATE OR REPLACE
 * VIEW` where views are replaced in place, or follows a `DROP VIEW IF EXISTS name`; comment-only parts are left out.
 */
export function viewStatements(text: string, flags: Pick<CompatibilityFlags, 'replaceViews'>): string[] {
  const out: string[] = [];
  for (const part of text.split(BREAKPOINT)) {
    const code = part.replace(/--[^\n]*/g, '').trim();
    if (code === '') continue;
    const view = /^CREATE VIEW ("?[A-Za-z_][\w]*"?) AS\b/i.exec(code);
    if (!view) throw new StoreError(`a views script may only create views; found: ${code.slice(0, 60)}...`);
    if (flags.replaceViews) out.push(part.trim().replace(/^CREATE VIEW/im, 'CREATE OR REPLACE VIEW'));
    else out.push(`DROP VIEW IF EXISTS ${view[1]}`, part.trim());
  }
  return out;
}
