import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { MigrationMeta } from 'drizzle-orm/migrator';
import { migrator } from '../../db/schema/drizzle.ts';
import type { Dialect } from '../config.ts';
import { StoreError } from '../errors.ts';

/**
 * The committed drizzle-kit migrations, located relative to this module (not the working directory), so the CLI
 * works from any directory. Bookkeeping uses drizzle's own `__drizzle_migrations` table layout on both dialects.
 */
export const MIGRATIONS_TABLE = '__drizzle_migrations';

export function migrationsFolder(dialect: Dialect): string {
  return fileURLToPath(new URL(`../../db/migrations/${dialect === 'postgres' ? 'pg' : 'sqlite'}`, import.meta.url));
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
