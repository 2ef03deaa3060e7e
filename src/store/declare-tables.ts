import { sql } from '../../db/schema/drizzle.ts';
import { StoreError, TableChangeError } from '../errors.ts';
import type { Adapter, Executor } from './adapter.ts';
import { declaredTableSink } from './declared-table-sink.ts';
import { declaredTableName, planTable, type RecordedShape, type TablePlan } from './declared-tables.ts';
import { quoted } from './identifiers.ts';
import { migrationLock, step, type MigratorOptions } from './migrator.ts';
import type { SinkDef } from './sink-def.ts';
import type { DeclaredTable, PageWrite, SinkName, TableRecord, TableStep } from './types.ts';

/**
 * The migrator's part for declared tables (docs/tables.md): each change a declaration makes to its table (create it,
 * add a column) is one step, applied in its own transaction under the migration lock and recorded in the bookkeeping
 * (`__declared_tables`: table, step number, what changed, its statements and their checksum, the table's shape after
 * it, when), as a versioned migration is in drizzle's table. A database already in step is only read: no lock.
 */

interface DeclaredRow {
  table_name: string;
  step: number | string;
  shape: string;
}

export interface DeclaredTables {
  /** The steps this call applied. */
  steps: TableStep[];
  /** Each declared table's sink, by its declared name. */
  sinks: Map<string, SinkDef<TableRecord>>;
}

/**
 * Brings every declared table in step with its declaration, or refuses (TableChangeError, one line per refused change,
 * nothing of any declaration applied) when one changes what cannot change in place.
 */
export async function declareTables(db: Adapter, tables: readonly DeclaredTable[], options: MigratorOptions): Promise<DeclaredTables> {
  let plans = await planAll(db, db, tables);
  const steps: TableStep[] = [];
  if (plans.some(({ plan }) => 'refused' in plan || plan.steps.length > 0)) {
    const lock = await migrationLock(db, options);
    try {
      // Looked at again under the lock before anything is refused or applied: the look above read the bookkeeping and
      // the tables in separate statements, so it can see a table another process created and recorded between them
      // as a table nobody recorded.
      plans = await planAll(db, db, tables);
      const refused = plans.flatMap(({ plan }) => ('refused' in plan ? plan.refused : []));
      if (refused.length > 0) throw new TableChangeError(refused.join('\n'));
      if (!plans.some(({ plan }) => 'steps' in plan && plan.steps.length > 0)) return finish(db, plans, steps, options);
      for (const statement of db.bookkeeping.setup) await db.exec(statement);
      await step(db, (tx) =>
        tx.exec(
          `CREATE TABLE IF NOT EXISTS ${db.bookkeeping.declared} (table_name text NOT NULL, step integer NOT NULL, change text NOT NULL, ` +
            'statements text NOT NULL, checksum text NOT NULL, shape text NOT NULL, applied_at text NOT NULL, PRIMARY KEY (table_name, step))',
        ),
      );
      // Planned again in each table's step: another process may have applied some of it since the look above.
      plans = [];
      for (const table of tables) plans.push({ table, plan: await step(db, (tx) => applyTable(db, tx, table, steps)) });
    } finally {
      await lock.release();
    }
  }
  return finish(db, plans, steps, options);
}

/** Each declared table's sink from its plan (refusing any refused one), and a line per step applied. */
function finish(db: Adapter, planned: ReadonlyArray<{ table: DeclaredTable; plan: TablePlan }>, applied: TableStep[], options: MigratorOptions): DeclaredTables {
  const sinks = new Map<string, SinkDef<TableRecord>>();
  for (const { table, plan } of planned) {
    if ('refused' in plan) throw new TableChangeError(plan.refused.join('\n'));
    sinks.set(table.name, declaredTableSink(table, plan.retired, db.flags));
  }
  for (const s of applied) options.logger.info({ table: s.table, step: s.step }, `declared table: ${s.change}`);
  return { steps: applied, sinks };
}

/**
 * What declareTables would do now, read only (`check`): the steps it would apply, and the lines it would refuse with.
 */
export async function planTables(db: Adapter, tables: readonly DeclaredTable[]): Promise<{ changes: string[]; refused: string[] }> {
  const plans = await planAll(db, db, tables);
  return {
    changes: plans.flatMap(({ plan }) => ('steps' in plan ? plan.steps.map((s) => s.change) : [])),
    refused: plans.flatMap(({ plan }) => ('refused' in plan ? plan.refused : [])),
  };
}

async function planAll(db: Adapter, tx: Pick<Executor, 'all'>, tables: readonly DeclaredTable[]): Promise<Array<{ table: DeclaredTable; plan: TablePlan }>> {
  if (tables.length === 0) return [];
  const bookkept = await exists(db, tx, db.bookkeeping.declared);
  const out = [];
  for (const table of tables) {
    const recorded = bookkept ? await lastShape(db, tx, table) : undefined;
    out.push({ table, plan: planTable(table, recorded?.shape, await exists(db, tx, quoted(declaredTableName(table.name))), db.flags) });
  }
  return out;
}

/** One table's steps, in one transaction; refusals are returned (the caller throws), steps appended to `applied`. */
async function applyTable(db: Adapter, tx: Executor, table: DeclaredTable, applied: TableStep[]): Promise<TablePlan> {
  const recorded = await lastShape(db, tx, table);
  const plan = planTable(table, recorded?.shape, await exists(db, tx, quoted(declaredTableName(table.name))), db.flags);
  if ('refused' in plan) return plan;
  let number = recorded?.step ?? 0;
  const sqlName = declaredTableName(table.name);
  for (const s of plan.steps) {
    number += 1;
    for (const statement of s.statements) await tx.exec(statement);
    await tx.run(sql`
      INSERT INTO ${sql.raw(db.bookkeeping.declared)} (table_name, step, change, statements, checksum, shape, applied_at)
      VALUES (${sqlName}, ${number}, ${s.change}, ${s.statements.join(';\n')}, ${s.checksum}, ${JSON.stringify(s.shape)}, ${new Date().toISOString()})`);
    applied.push({ table: sqlName, step: number, change: s.change });
  }
  return plan;
}

async function lastShape(db: Adapter, tx: Pick<Executor, 'all'>, table: DeclaredTable): Promise<{ step: number; shape: RecordedShape } | undefined> {
  const [row] = await tx.all<DeclaredRow>(sql`
    SELECT table_name, step, shape FROM ${sql.raw(db.bookkeeping.declared)}
    WHERE table_name = ${declaredTableName(table.name)} ORDER BY step DESC LIMIT 1`);
  return row ? { step: Number(row.step), shape: JSON.parse(row.shape) as RecordedShape } : undefined;
}

async function exists(db: Adapter, tx: Pick<Executor, 'all'>, name: string): Promise<boolean> {
  const [row] = await tx.all<{ ok: unknown }>(sql.raw(db.flags.tableExists.replace('$1', `'${name.replaceAll("'", "''")}'`)));
  return row?.ok === true || Number(row?.ok) === 1;
}

/** A store's declared tables: declared once per process (declareTables), then the sink each page is written with. */
export class DeclaredSinks {
  /** By declared name, with the declaration each sink was made from. */
  readonly #tables = new Map<string, { declaration: string; sink: SinkDef<TableRecord> }>();

  async declare(db: Adapter, tables: readonly DeclaredTable[], options: MigratorOptions): Promise<TableStep[]> {
    const { steps, sinks } = await declareTables(db, tables, options);
    for (const table of tables) this.#tables.set(table.name, { declaration: JSON.stringify(table), sink: sinks.get(table.name)! });
    return steps;
  }

  /** What a page is written with: its built-in sink, or its table's sink as declared in this store (else refused). */
  sinkOf(page: PageWrite): SinkName | SinkDef<TableRecord> {
    if (page.sink !== 'table') return page.sink;
    const declared = page.table && this.#tables.get(page.table.name);
    if (!page.table || !declared || declared.declaration !== JSON.stringify(page.table)) {
      throw new StoreError(`the table ${page.table ? declaredTableName(page.table.name) : '(none given)'} was not declared with this declaration in this store: call declareTables first`);
    }
    return declared.sink;
  }
}
