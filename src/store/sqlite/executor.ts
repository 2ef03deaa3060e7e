import type { SQL } from 'drizzle-orm';
import type { Executor } from '../adapter.ts';
import type { KeyScope } from '../key-cache.ts';
import { perSink, preparePage, upserted, type SinkDef } from '../sinks.ts';

/**
 * Statements on SQLite, the same whichever connection runs them: the main one (synchronously, on this thread) or the
 * writer thread's (writer.ts). A sink's upsert is one prepared INSERT ... ON CONFLICT run once per row; the page's
 * rows travel as one flat array of values, and the values every row of a page shares (its arrival) once, in front.
 */
export interface Runner {
  all<T>(text: string, params: readonly unknown[]): T[] | Promise<T[]>;
  run(text: string, params: readonly unknown[]): number | Promise<number>;
  exec(text: string): void | Promise<void>;
  /**
   * Runs `text` once per row of `width` values in `values`, each row's bound after the values of `lead`. The writer
   * thread's runner only sends them: their outcome is known by the transaction's commit (transactions.ts).
   */
  rows(text: string, width: number, values: readonly unknown[], lead?: readonly unknown[]): void | Promise<void>;
  /** Where statements are sent ahead of their answers (the writer thread): keeps one's outcome for the commit. */
  send?(outcome: Promise<unknown>): void;
}

export type Compile = (query: SQL) => { sql: string; params: unknown[] };

/** Each sink's upsert text, built once per process. */
export const upsertText = perSink(insertText);

/**
 * A sink's upsert: one `?` per page and row value, in bound order. A computed column takes the place of the bound
 * values it reads, which must therefore come last and in order (SQLite binds positionally).
 */
export function insertText(def: SinkDef<unknown>): string {
  const bound = [...def.pageColumns, ...def.rowColumns].map((c) => c.name);
  const read: string[] = [];
  const computed = def.computed.map((c) => c.sql.replace(/:(\w+)/g, (_, name: string) => (read.push(name), '?')));
  const plain = bound.filter((name) => !read.includes(name));
  if ([...plain, ...read].join() !== bound.join()) {
    throw new Error(`${def.writeTable}: computed columns must read the last bound values in order (${read.join(', ')})`);
  }
  const columns = [...plain, ...def.computed.map((c) => c.column)];
  const values = [...plain.map(() => '?'), ...computed];
  return `INSERT INTO ${def.writeTable} (${columns.join(', ')}) VALUES (${values.join(', ')}) ${def.onConflict}`;
}

export function sqliteExecutor(runner: Runner, compile: Compile, scope: KeyScope): Executor {
  const executor: Executor = {
    dialect: 'sqlite',
    async all<T>(query: SQL): Promise<T[]> {
      const q = compile(query);
      return runner.all<T>(q.sql, q.params);
    },
    async run(query: SQL): Promise<number> {
      const q = compile(query);
      return runner.run(q.sql, q.params);
    },
    async runAhead(query, check) {
      const q = compile(query);
      if (runner.send) runner.send(Promise.resolve(runner.run(q.sql, q.params)).then((changed) => check?.(changed)));
      else {
        const changed = await runner.run(q.sql, q.params);
        await check?.(changed);
      }
    },
    async exec(statement: string): Promise<void> {
      await runner.exec(statement);
    },
    async bulk(text, width, values) {
      if (values.length > 0) await runner.rows(text, width, values);
    },
    async upsert(sink, page, records) {
      const ready = await preparePage(sink, 'sqlite', { tx: executor, keys: scope, page }, records);
      if (!ready) return {};
      const { def, prepared } = ready;
      const width = def.rowColumns.length;
      const values = new Array<unknown>(records.length * width);
      for (let i = 0, offset = 0; i < records.length; i++, offset += width) def.fill(records[i], values, offset, i, prepared);
      await runner.rows(upsertText(def), width, values, def.pageValues(page, prepared));
      return upserted(def, prepared);
    },
  };
  return executor;
}
