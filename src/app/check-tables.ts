import type { Config } from '../config.ts';
import { DatabaseLocationError } from '../errors.ts';
import { declaredTableName } from '../store/declared-tables.ts';
import type { DeclaredTable } from '../store/types.ts';
import type { AnyStream } from '../sync/stream.ts';
import { openForReading } from './database.ts';

/**
 * `check`'s look at the declared tables (docs/tables.md): what the next sync would do to each in the database it writes,
 * read only. A type or key change the sync would refuse is a problem here, before the deploy; a column it would add is
 * a note. A database that does not exist yet, or holds no tables yet, has nothing to compare: the sync creates them.
 */
export interface TablesCheck {
  /** The declared tables compared (their SQL names); empty when none is declared or nothing was compared. */
  tables: string[];
  /** What the next sync would change: `added column seats (integer) to api_desks`. */
  changes: string[];
  /** What it would refuse, one line each with the fix. */
  problems: string[];
  /** Why nothing was compared, when it was not (a warning). */
  skipped?: string;
}

export async function checkTables(config: Config, streams: ReadonlyArray<AnyStream>): Promise<TablesCheck | undefined> {
  const tables = streams.flatMap((s): DeclaredTable[] => (s.table ? [s.table] : []));
  if (tables.length === 0) return undefined;
  const names = tables.map((t) => declaredTableName(t.name));
  let store;
  try {
    store = await openForReading(config.database);
  } catch (error) {
    // A first deploy: no SQLite file, or a database no sync has written yet; the sync creates every declared table.
    // (A Postgres database that does not exist is no first deploy: the sync would not create it, so it is said.)
    const firstDeploy = (error instanceof DatabaseLocationError && config.database.dialect === 'sqlite') || /holds no occupancy-sync tables yet/.test((error as Error).message);
    if (firstDeploy) return { tables: [], changes: [], problems: [] };
    return { tables: [], changes: [], problems: [], skipped: `the declared tables were not compared with the database: ${(error as Error).message}` };
  }
  try {
    const { changes, refused } = await store.planTables(tables);
    return { tables: names, changes, problems: refused };
  } finally {
    await store.close();
  }
}
