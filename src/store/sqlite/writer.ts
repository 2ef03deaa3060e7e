import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { StoreError } from '../../errors.ts';
import { packRows } from './row-columns.ts';

/**
 * SQLite write transactions on a worker thread with its own connection to the same file.
 *
 * Why: better-sqlite3 runs every statement synchronously on the calling thread, so while a page of readings is
 * written (most of a sync's time) the event loop can do nothing else, and fetching, unzipping, parsing and checking
 * the next page waits for it. With the writes here, the main thread prepares page N+1 while this thread writes page
 * N, on the second core (docs/performance.md measures the gain against a minimal client doing the same).
 *
 * The main thread still drives each transaction statement by statement (BEGIN IMMEDIATE, the page's statements,
 * COMMIT), so a transaction is exactly as atomic as on one connection, and the adapter's in-process mutex keeps the
 * main connection (reads, locks, migrations) from writing while one is open. Rows of an upsert travel as a page's
 * columns (row-columns.ts) and run through one prepared statement here.
 */

/** Plain CommonJS run with `eval`, so the worker needs no TypeScript loader in any host (tsx, vitest, plain node). */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
for (const pragma of workerData.pragmas) db.pragma(pragma);
const statements = new Map();
// After a failed statement every later one is refused until the main thread rolls back: it may send a transaction's
// statements without waiting for each one's answer, and none may run after one that failed.
let failed = false;
// Buffers cross the thread boundary as plain Uint8Arrays; the driver binds Buffers as BLOBs.
const bind = (v) => (v instanceof Uint8Array && !Buffer.isBuffer(v) ? Buffer.from(v.buffer, v.byteOffset, v.byteLength) : v);
const prepare = (text) => {
  let stmt = statements.get(text);
  if (!stmt) {
    stmt = db.prepare(text);
    statements.set(text, stmt);
  }
  return stmt;
};
parentPort.on('message', (m) => {
  if (m.op === 'close') {
    if (db.inTransaction) db.prepare('ROLLBACK').run();
    db.close();
    parentPort.close();
    return;
  }
  if (failed && m.op !== 'rollback') {
    parentPort.postMessage({ id: m.id, ok: false, message: 'an earlier statement of this transaction failed', code: 'OCCUPANCY_SYNC_EARLIER_FAILURE' });
    return;
  }
  try {
    let result;
    if (m.op === 'all') result = prepare(m.sql).all(...m.params.map(bind));
    else if (m.op === 'run') result = prepare(m.sql).run(...m.params.map(bind)).changes;
    else if (m.op === 'rollback') {
      failed = false;
      result = db.inTransaction ? (prepare('ROLLBACK').run(), 1) : 0;
    }
    else if (m.op === 'rows') {
      // The inverse of packRows (row-columns.ts): numeric columns from m.numbers (NaN for null), the rest in order.
      const stmt = prepare(m.sql);
      const width = m.width;
      const lead = m.lead.map(bind);
      const at = lead.length;
      const args = lead.concat(new Array(width));
      const numeric = m.numeric;
      const numbers = m.numbers;
      const others = m.others;
      for (let r = 0, k = 0, o = 0; r < m.rows; r++) {
        for (let c = 0; c < width; c++) {
          if (numeric[c]) {
            const x = numbers[k++];
            args[at + c] = x !== x ? null : x;
          } else args[at + c] = bind(others[o++]);
        }
        // Spread: the driver reads an array argument element by element through N-API, a tenth more per row.
        stmt.run(...args);
      }
      result = m.rows;
    } else throw new Error('unknown operation ' + m.op);
    parentPort.postMessage({ id: m.id, ok: true, result });
  } catch (error) {
    failed = m.op !== 'rollback';
    parentPort.postMessage({ id: m.id, ok: false, message: String((error && error.message) || error), code: error && error.code });
  }
});
`;

export interface WriterOptions {
  path: string;
  /** The main connection's pragmas, applied to this one too (WAL, busy timeout, synchronous, cache, checkpoints). */
  pragmas: readonly string[];
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

/** A driver error as the main thread would have seen it: its message and SQLite code (errors.ts reads both). */
class WriterError extends Error {
  readonly code: string | undefined;
  constructor(message: string, code: string | undefined) {
    super(message);
    this.name = 'SqliteError';
    this.code = code;
  }
}

export class SqliteWriter {
  readonly #options: WriterOptions;
  #worker: Worker | undefined;
  #exited: Promise<void> = Promise.resolve();
  #nextId = 0;
  readonly #pending = new Map<number, Pending>();

  constructor(options: WriterOptions) {
    this.#options = options;
  }

  #start(): Worker {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { path: this.#options.path, pragmas: this.#options.pragmas, driver: createRequire(import.meta.url).resolve('better-sqlite3') },
    });
    worker.on('message', (m: { id: number; ok: boolean; result?: unknown; message?: string; code?: string }) => {
      const call = this.#pending.get(m.id);
      if (!call) return;
      this.#pending.delete(m.id);
      if (m.ok) call.resolve(m.result);
      else call.reject(new WriterError(m.message ?? 'unknown error', m.code));
    });
    const fail = (error: Error) => {
      if (this.#worker === worker) this.#worker = undefined;
      for (const call of this.#pending.values()) call.reject(new StoreError(`the SQLite writer thread stopped: ${error.message}`, { cause: error }));
      this.#pending.clear();
    };
    worker.on('error', fail);
    this.#exited = new Promise((resolve) => {
      worker.once('exit', (code) => {
        fail(new Error(`exit code ${code}`));
        resolve();
      });
    });
    this.#worker = worker;
    return worker;
  }

  #call<T>(message: Record<string, unknown>, transfer: ArrayBuffer[] = []): Promise<T> {
    const worker = this.#worker ?? this.#start();
    const id = this.#nextId++;
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      worker.postMessage({ ...message, id }, transfer);
    });
  }

  all<T>(sql: string, params: readonly unknown[]): Promise<T[]> {
    return this.#call({ op: 'all', sql, params });
  }

  run(sql: string, params: readonly unknown[]): Promise<number> {
    return this.#call({ op: 'run', sql, params });
  }

  /** Runs `sql` once per row of `width` values in `values`, after the values of `lead` (one page of an upsert). */
  rows(sql: string, width: number, values: readonly unknown[], lead: readonly unknown[] = []): Promise<number> {
    const packed = packRows(width, values);
    return this.#call({ op: 'rows', sql, width, lead, ...packed }, [packed.numbers.buffer as ArrayBuffer]);
  }

  /** Rolls back the open transaction, if any (after a failure half-way). */
  rollback(): Promise<number> {
    return this.#call({ op: 'rollback' });
  }

  async close(): Promise<void> {
    const worker = this.#worker;
    if (!worker) return;
    worker.postMessage({ op: 'close' });
    await this.#exited;
  }
}
