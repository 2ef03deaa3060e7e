import { randomUUID } from 'node:crypto';
import type BetterSqlite3 from 'better-sqlite3';
import { StoreError } from '../../errors.ts';
import { processStart } from '../../process-start.ts';
import type { BudgetRows, KeyStore, LimitPolicy, StoredLimit, Take } from '../../budget-store.ts';
import { budgetTiming } from '../api-budget.ts';

/**
 * The API budget of every key (src/store/api-budget.ts) for the processes of one host using one SQLite database: a small SQLite file beside it
 * (`<database>-api-budget`), so cron `sync`, `backfill` and `serve` on the host draw on one budget per key.
 * - a key's in-flight slots are rows naming their holder (pid, the process's start time, a token), taken in a
 *   BEGIN IMMEDIATE transaction (one writer at a time, so count-and-insert is atomic across processes); a row whose
 *   holder is gone (kill -9) is taken back by the next process that looks, and every row expires after the longest
 *   a request can take, so no slot can leak;
 * - the key's limit, pause and rate are one row, changed in the same kind of transaction.
 * The file holds no secret and no data: deleting it (with no process running) only forgets what was learnt.
 * Processes on other hosts are not counted: a SQLite database is one host's; use Postgres to share a key across hosts.
 */

const SCHEMA = `
CREATE TABLE IF NOT EXISTS budgets (key_id TEXT PRIMARY KEY, state TEXT NOT NULL, rate_tat REAL NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS slots (
  key_id TEXT NOT NULL,
  slot INTEGER NOT NULL,
  pid INTEGER NOT NULL,
  started TEXT,
  token TEXT NOT NULL,
  expires_at REAL NOT NULL,
  PRIMARY KEY (key_id, slot)
);`;

export interface SqliteBudgetOptions<S extends StoredLimit> {
  /** The coordinator file (src/store/index.ts puts it beside the database). */
  file: string;
  policy: LimitPolicy<S>;
  /** A slot row expires this long after it was taken: the longest a request can take (HTTP_TIMEOUT) and a margin. */
  leaseMs: number;
}


/** Tokens of the backends open in this process: a row with our pid and another token is a closed one's. */
const liveTokens = new Set<string>();

function holderGone(pid: number, started: string | null, token: string): boolean {
  if (pid === process.pid) return !liveTokens.has(token);
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: the process exists but belongs to another user: alive.
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return true;
  }
  const now = processStart(pid);
  return started !== null && now !== null && now !== started;
}

export class SqliteBudgetRows<S extends StoredLimit> implements BudgetRows<S> {
  readonly dialect = 'sqlite';
  readonly timing: BudgetRows<S>['timing'];
  readonly #o: SqliteBudgetOptions<S>;
  readonly #stores = new Map<string, SqliteKeyStore<S>>();
  #db: BetterSqlite3.Database | undefined;
  #opening: Promise<BetterSqlite3.Database> | undefined;
  readonly token = randomUUID();
  readonly started = processStart(process.pid);

  constructor(options: SqliteBudgetOptions<S>) {
    this.#o = options;
    this.timing = budgetTiming('sqlite', options.leaseMs);
    liveTokens.add(this.token);
  }

  keyStore(keyId: string): KeyStore<S> {
    let store = this.#stores.get(keyId);
    if (!store) {
      store = new SqliteKeyStore(this, keyId, this.#o);
      this.#stores.set(keyId, store);
    }
    return store;
  }

  /** Set by close(), which gave back every slot of this process: later releases have nothing left to do. */
  closed = false;

  readonly #statements = new Map<string, BetterSqlite3.Statement>();

  /** A statement of the coordinator file, prepared once: takes and gives run on every query of a backfill. */
  statement(db: BetterSqlite3.Database, text: string): BetterSqlite3.Statement {
    let statement = this.#statements.get(text);
    if (!statement) {
      statement = db.prepare(text);
      this.#statements.set(text, statement);
    }
    return statement;
  }

  database(): Promise<BetterSqlite3.Database> {
    if (this.closed) return Promise.reject(new Error('the API budget was closed'));
    this.#opening ??= this.#open().catch((error: unknown) => {
      this.#opening = undefined;
      throw new StoreError(`the API budget cannot open its file ${this.#o.file}: ${(error as Error).message}. Fix: let this user write beside the database`, { cause: error });
    });
    return this.#opening;
  }

  async #open(): Promise<BetterSqlite3.Database> {
    const { default: Database } = await import('better-sqlite3');
    // A short busy wait: transactions here take microseconds, and this one blocks the event loop while it waits.
    const db = new Database(this.#o.file, { timeout: 2000 });
    db.pragma('journal_mode = WAL');
    // What is lost in a power cut is only what was learnt about the platform; no fsync per query.
    db.pragma('synchronous = OFF');
    db.exec(SCHEMA);
    this.#db = db;
    return db;
  }

  async close(): Promise<void> {
    this.closed = true;
    liveTokens.delete(this.token);
    const db = this.#db ?? (await this.#opening?.catch(() => undefined));
    this.#db = undefined;
    this.#opening = undefined;
    this.#statements.clear();
    if (!db) return;
    // The slots this process still holds go back with it.
    db.prepare('DELETE FROM slots WHERE pid = ? AND token = ?').run(process.pid, this.token);
    db.close();
  }
}

class SqliteKeyStore<S extends StoredLimit> implements KeyStore<S> {
  readonly #backend: SqliteBudgetRows<S>;
  readonly #keyId: string;
  readonly #o: SqliteBudgetOptions<S>;

  constructor(backend: SqliteBudgetRows<S>, keyId: string, options: SqliteBudgetOptions<S>) {
    this.#backend = backend;
    this.#keyId = keyId;
    this.#o = options;
  }

  /** The key's state as stored (created on first use), inside the caller's transaction. */
  #state(db: BetterSqlite3.Database): S {
    const row = this.#backend.statement(db, 'SELECT state FROM budgets WHERE key_id = ?').get(this.#keyId) as { state: string } | undefined;
    if (row) return this.#o.policy.reconcile(JSON.parse(row.state) as S);
    const state = this.#o.policy.initial();
    this.#backend.statement(db, 'INSERT INTO budgets (key_id, state) VALUES (?, ?)').run(this.#keyId, JSON.stringify(state));
    return state;
  }

  async take(now: number, want: number): Promise<Take<S>> {
    const db = await this.#backend.database();
    // Leases are on the wall clock: they guard against dead processes, whatever clock the budget runs on.
    const wall = Date.now();
    return db
      .transaction((): Take<S> => {
        const state = this.#state(db);
        const rows = this.#backend.statement(db, 'SELECT slot, pid, started, token, expires_at FROM slots WHERE key_id = ?').all(this.#keyId) as Array<{
          slot: number;
          pid: number;
          started: string | null;
          token: string;
          expires_at: number;
        }>;
        const taken = new Set<number>();
        for (const row of rows) {
          if (row.expires_at < wall || holderGone(row.pid, row.started, row.token)) {
            this.#backend.statement(db, 'DELETE FROM slots WHERE key_id = ? AND slot = ?').run(this.#keyId, row.slot);
          } else {
            taken.add(row.slot);
          }
        }
        const insert = this.#backend.statement(db, 'INSERT INTO slots (key_id, slot, pid, started, token, expires_at) VALUES (?, ?, ?, ?, ?, ?)');
        const grants: Array<{ slot: number; level: number }> = [];
        for (;;) {
          const admission = this.#o.policy.admit(state, taken.size, now);
          if (!admission.go) return grants.length > 0 ? { grants, state } : { grants: [], state, why: admission.why };
          const slot = this.#o.policy.lowestFree(taken);
          taken.add(slot);
          insert.run(this.#keyId, slot, process.pid, this.#backend.started, this.#backend.token, wall + this.#o.leaseMs);
          grants.push({ slot, level: admission.level });
          if (grants.length >= want) return { grants, state };
        }
      })
      .immediate();
  }

  async give(slot: number): Promise<void> {
    if (this.#backend.closed) return;
    const db = await this.#backend.database();
    this.#backend.statement(db, 'DELETE FROM slots WHERE key_id = ? AND slot = ? AND token = ?').run(this.#keyId, slot, this.#backend.token);
  }

  async update(change: (state: S) => S): Promise<S> {
    const db = await this.#backend.database();
    return db
      .transaction(() => {
        const current = this.#state(db);
        const next = change(current);
        if (next !== current) this.#backend.statement(db, 'UPDATE budgets SET state = ? WHERE key_id = ?').run(JSON.stringify(next), this.#keyId);
        return next;
      })
      .immediate();
  }

  async reserve(now: number, intervalMs: number, burst: number): Promise<number> {
    const db = await this.#backend.database();
    return db
      .transaction(() => {
        this.#state(db);
        const row = this.#backend.statement(db, 'SELECT rate_tat FROM budgets WHERE key_id = ?').get(this.#keyId) as { rate_tat: number };
        const { at, tat } = this.#o.policy.reserveRate(row.rate_tat, now, intervalMs, burst);
        this.#backend.statement(db, 'UPDATE budgets SET rate_tat = ? WHERE key_id = ?').run(tat, this.#keyId);
        return at;
      })
      .immediate();
  }

  changed(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      function done() {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      }
    });
  }
}
