import { createHash } from 'node:crypto';
import type { CompatibilityFlags } from './compatibility.ts';
import { sinkColumns } from './columns.ts';
import { quoted } from './identifiers.ts';
import type { DeclaredColumn, DeclaredTable, SinkTarget, TableColumnType } from './types.ts';

/**
 * Declared tables (docs/tables.md): a stream of a definitions file may name its own table, whose columns are its
 * record's fields. This is the pure part: the SQL name of a table and of its columns, what a declaration changes in
 * the table as last recorded (create it, add columns), what it may not change (a column's type, the key), and the
 * DDL of each step. The steps run under the migration lock (declare-tables.ts), each recorded with its checksum.
 *
 * The evolution rules, as dlt's schema contracts name them: a new table and a new column evolve (a column added is
 * NULL in the rows stored before); a column the declaration no longer names stays, NULL in every row written after
 * (nothing stored is dropped); a type change is frozen: refused with one line naming the fix, never a variant column.
 */

/** Every declared table's SQL name starts with it, so none can take the name of one of ours. */
export const TABLE_PREFIX = 'api_';

/** What a table's name (as declared, without the prefix) must be: a safe unquoted identifier in both dialects. */
export const TABLE_NAME = { re: /^[a-z][a-z0-9_]{0,46}$/, rule: 'must be lower case letters, digits and underscores, starting with a letter (at most 47)', example: 'desks' };

/** Names whose prefixed form is one of occupancy-sync's own tables (the API budget's, on Postgres). */
export const RESERVED_TABLE_NAMES: readonly string[] = ['budgets'];

/** Columns every declared table has besides its record's fields: the customer and the listing's times. */
export const STORE_COLUMNS: readonly string[] = ['customer_id', 'first_seen_at', 'last_seen_at', 'deleted_at'];

/** The SQL table of a declaration: `desks` is `api_desks`. */
export function declaredTableName(name: string): string {
  return `${TABLE_PREFIX}${name}`;
}

/** A record field's column: the field in snake case (`floorSpaceId` is `floor_space_id`, `seats` stays `seats`). */
export function columnOfField(field: string): string {
  return field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** How a sink or a declared table is named in messages: `buildings`, `api_desks`. */
export const targetName = (target: SinkTarget): string => (typeof target === 'string' ? target : declaredTableName(target.name));

/** The relation a sink's or a declared table's rows are in, their fields' columns and types, and whether it soft-deletes. */
export function targetRelation(target: SinkTarget): { relation: string; softDelete: boolean; columns: ReadonlyArray<{ field: string; column: string; type: string }> } {
  if (typeof target === 'string') return sinkColumns(target);
  return { relation: declaredTableName(target.name), softDelete: true, columns: target.columns };
}


/** The table as last recorded: its key columns and every column it has (named by the declaration now or not). */
export interface RecordedShape {
  key: string[];
  columns: Record<string, TableColumnType>;
}

/** One change a declaration makes, run and recorded as one step. */
export interface TablePlanStep {
  change: string;
  statements: string[];
  /** The shape once the step is applied. */
  shape: RecordedShape;
  /** SHA-256 of its statements: what the bookkeeping records of its DDL. */
  checksum: string;
}

export type TablePlan =
  | { refused: string[] }
  | {
      steps: TablePlanStep[];
      /** The table's shape after the steps (or as recorded when there are none). */
      shape: RecordedShape;
      /** Columns the table has and the declaration no longer names: kept, NULL in rows written from now on. */
      retired: string[];
    };

/**
 * What `table` changes in its SQL table. `recorded`: the shape last recorded for it; `exists`: whether the table is
 * there (a table dropped by hand to rebuild it is created again, whatever was recorded). A table that is there with
 * nothing recorded was not made by occupancy-sync and is refused, not taken over.
 */
export function planTable(table: DeclaredTable, recorded: RecordedShape | undefined, exists: boolean, flags: Pick<CompatibilityFlags, 'declaredTypes'>): TablePlan {
  const sqlName = declaredTableName(table.name);
  const key = table.key.map((field) => columnOf(table, field));
  if (!exists) {
    const shape: RecordedShape = { key, columns: Object.fromEntries(table.columns.map((c) => [c.column, c.type])) };
    const statements = [createStatement(sqlName, table, flags)];
    return { steps: [{ change: `created ${sqlName} (${table.columns.map((c) => c.column).join(', ')})`, statements, shape, checksum: checksum(statements) }], shape, retired: [] };
  }
  if (!recorded) {
    return {
      refused: [
        `table ${sqlName} (stream table ${table.name}) exists but was not created by occupancy-sync (nothing is recorded for it). ` +
          `Fix: rename or drop that table, or give the declared table another name`,
      ],
    };
  }
  const refused: string[] = [];
  if (recorded.key.join(',') !== key.join(',')) {
    refused.push(
      `table ${sqlName}: the key was [${recorded.key.join(', ')}] and is now declared [${key.join(', ')}]; a table's key cannot change in place. ` +
        `Fix: declare the table under a new name (table: ${table.name}_v2), or rebuild it: ${rebuild(sqlName, table)}`,
    );
  }
  const steps: TablePlanStep[] = [];
  let shape = recorded;
  for (const c of table.columns) {
    const was = recorded.columns[c.column];
    if (was === undefined) {
      shape = { key: shape.key, columns: { ...shape.columns, [c.column]: c.type } };
      const statements = [`ALTER TABLE ${quoted(sqlName)} ADD COLUMN ${quoted(c.column)} ${flags.declaredTypes[c.type]}`];
      steps.push({ change: `added column ${c.column} (${c.type}) to ${sqlName}`, statements, shape, checksum: checksum(statements) });
    } else if (was !== c.type) {
      refused.push(
        `table ${sqlName}: field ${c.field} (column ${c.column}) is stored as ${was} and is now declared ${c.type}; a column's type never changes in place. ` +
          `Fix: map the new type under a new field name (e.g. ${c.field}${c.type[0]!.toUpperCase()}${c.type.slice(1)}: { path: ..., type: ... }), keep the old type, or rebuild the table: ${rebuild(sqlName, table)}`,
      );
    }
  }
  if (refused.length > 0) return { refused };
  const named = new Set(table.columns.map((c) => c.column));
  return { steps, shape, retired: Object.keys(shape.columns).filter((column) => !named.has(column)) };
}

/** How a table is rebuilt: dropped, and for a windowed stream its state reset, so the next sync reads it whole. */
function rebuild(sqlName: string, table: DeclaredTable): string {
  const reset = `\`occupancy-sync state reset --stream ${table.stream?.name ?? '<its stream>'} --yes\``;
  const read = table.stream === undefined ? `, then ${reset} if the stream is incremental` : table.stream.incremental ? `, then ${reset}` : '';
  return `DROP TABLE ${sqlName}${read}; the next sync creates it and reads it again`;
}

function columnOf(table: DeclaredTable, field: string): string {
  const column = table.columns.find((c) => c.field === field);
  if (!column) throw new Error(`declared table ${table.name}: key field ${field} is not one of its columns`);
  return column.column;
}

function createStatement(sqlName: string, table: DeclaredTable, flags: Pick<CompatibilityFlags, 'declaredTypes'>): string {
  const keyColumns = new Set(table.key.map((field) => columnOf(table, field)));
  const time = flags.declaredTypes.timestamp;
  const column = (c: DeclaredColumn) => `${quoted(c.column)} ${flags.declaredTypes[c.type]}${keyColumns.has(c.column) ? ' NOT NULL' : ''}`;
  return (
    `CREATE TABLE ${quoted(sqlName)} (customer_id text NOT NULL, ${table.columns.map(column).join(', ')}, ` +
    `first_seen_at ${time} NOT NULL, last_seen_at ${time} NOT NULL, deleted_at ${time}, ` +
    `PRIMARY KEY (customer_id, ${[...keyColumns].map(quoted).join(', ')}))`
  );
}

function checksum(statements: readonly string[]): string {
  return createHash('sha256').update(statements.join(';\n')).digest('hex');
}
