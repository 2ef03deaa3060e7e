import type { Sql } from 'postgres';
import { StoreError } from '../../errors.ts';
import type { Logger } from '../../logger.ts';
import type { BudgetRows, KeyStore, LimitPolicy, StoredLimit, Take } from '../../budget-store.ts';
import { BUDGET_TIMING } from '../api-budget.ts';
import { describeLocation } from '../errors.ts';
import { parsePgUrl } from './url.ts';

/**
 * The API budget of every key on Postgres (src/store/api-budget.ts), shared by every process using the database (`serve` instances, cron `sync`,
 * `backfill`):
 * - a key's in-flight slots are session advisory locks `(lock key, slot)`, slot < the key's limit, held on one
 *   dedicated connection of this process: the server drops them with the session, so a process killed with kill -9
 *   (or cut off from the database) cannot leak a slot, and no lease has to be renewed;
 * - the key's limit, its pause and its rate live in one row of `api_budgets` (the key itself is not stored: its row is
 *   named by a hash of the base URL and key name), changed by compare-and-set, so every process adapts one limit;
 * - a slot given back is announced with NOTIFY, so a process waiting for one tries again at once (and every 200 ms at
 *   the latest, should notifications be lost: a connection pooler in transaction mode has none, and no advisory lock
 *   either; see docs/api-client.md).
 */

const CHANNEL = 'occupancy_sync_api_budget';
const POLL_MS = BUDGET_TIMING.postgres.pollMs;
/**
 * Every budget statement is a lookup or a one-row change, answered in milliseconds. One that has no answer in this
 * time waits on a server or a network path that went silent (no reset, no answer: TCP itself would wait a quarter of
 * an hour): the session is dropped (its slots with it, as the server drops them when it sees the session end), the
 * query waiting for leave fails with a StoreError, and the next one connects anew. Also the connect timeout.
 */
const ANSWER_WITHIN_MS = 10_000;
/** close() waits this long for the work under way (a slot given back) before the session's sockets are destroyed. */
const CLOSE_WAIT_MS = 2_000;

const CREATE = `CREATE TABLE IF NOT EXISTS api_budgets (
  key_id text PRIMARY KEY,
  state jsonb NOT NULL,
  rate_tat double precision NOT NULL DEFAULT 0,
  version bigint NOT NULL DEFAULT 0,
  updated_at timestamptz NOT NULL DEFAULT now()
)`;

/**
 * Takes the lowest free slots under the limit (up to $7), unless the key is paused; one statement, one round trip.
 * Advisory locks are re-entrant within a session, so the slots this process holds already ($6) are skipped, not taken
 * twice. LIMIT stops the scan once enough locks are taken: the rows after it are never tried.
 */
const TAKE = `WITH b AS (
  SELECT state, CASE WHEN $5::boolean THEN least((state->>'limit')::int, $4::int) ELSE $4::int END AS lim
  FROM api_budgets WHERE key_id = $1
), t AS (
  SELECT s FROM b, generate_series(0, b.lim - 1) AS s
  WHERE (b.state->>'pausedUntil')::float8 <= $3::float8 AND s <> ALL($6::int[]) AND pg_try_advisory_lock($2::int, s)
  LIMIT $7
)
SELECT b.state,
  (SELECT coalesce(array_agg(s ORDER BY s), '{}') FROM t) AS slots,
  -- The key's slots held now, by every process: the load the last of these queries goes out at.
  (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND granted
     AND classid::bigint = ($2::bigint + 4294967296) % 4294967296) AS held
FROM b`;

export interface PgBudgetOptions<S extends StoredLimit> {
  /** The postgres:// DATABASE_URL, `?schema=` included: the budget's table lives beside the data, as the store's. */
  databaseUrl: string;
  policy: LimitPolicy<S>;
  /** The settings the take statement applies (API_MAX_IN_FLIGHT, adaptive or not). */
  maxInFlight: number;
  adaptive: boolean;
  logger: Logger;
}

export class PgBudgetRows<S extends StoredLimit> implements BudgetRows<S> {
  readonly dialect = 'postgres';
  readonly timing = BUDGET_TIMING.postgres;
  readonly #o: PgBudgetOptions<S>;
  readonly #stores = new Map<string, PgKeyStore<S>>();
  #session: Promise<Sql> | undefined;
  #listening: Promise<{ unlisten: () => Promise<void> } | undefined> | undefined;
  #closed = false;
  readonly #running = new Set<Promise<unknown>>();
  /** Incremented when the slots' session ends: slots taken on an earlier one are gone with it. */
  generation = 0;

  constructor(options: PgBudgetOptions<S>) {
    this.#o = options;
  }

  keyStore(keyId: string, lockKey: number): KeyStore<S> {
    let store = this.#stores.get(keyId);
    if (!store) {
      store = new PgKeyStore(this, keyId, lockKey, this.#o);
      this.#stores.set(keyId, store);
    }
    return store;
  }

  /**
   * Runs `work` on the connection holding this process's slots (it runs every budget statement), opened on first use.
   * close() waits for the work under way: a slot given back as the process ends must not race the session's end.
   */
  use<T>(work: (sql: Sql) => Promise<T>): Promise<T> {
    if (this.#closed) return Promise.reject(new Error('the API budget was closed'));
    this.#session ??= this.#open().catch((error: unknown) => {
      this.#session = undefined;
      throw error;
    });
    const session = this.#session;
    const running = session.then((sql) => this.#bounded(session, sql, work));
    this.#running.add(running);
    void running.then(
      () => this.#running.delete(running),
      () => this.#running.delete(running),
    );
    return running;
  }

  /** `work` within ANSWER_WITHIN_MS, or the session is dropped and the wait fails saying so. */
  async #bounded<T>(session: Promise<Sql>, sql: Sql, work: (sql: Sql) => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const silent = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        if (this.#session === session) {
          this.#session = undefined;
          // Its slots are gone with it, whether or not the socket's close reaches us (it may not, on a silent path).
          this.generation++;
        }
        void sql.end({ timeout: 0 }).catch(() => {});
        // The same line as the store's own statements give (postgres/watch.ts): whichever connection notices the
        // silence first, the run fails saying where the database is and that nothing committed is lost.
        reject(
          new StoreError(
            `no answer from Postgres at ${describeLocation(this.#o.databaseUrl)} for ${ANSWER_WITHIN_MS / 1000} s while sharing the API budget: the server or ` +
              'the network path to it is gone, so the connection was dropped (and the slots it held with it); what was not committed is not ' +
              'stored, and the next run resumes from the last committed page. Fix: check that the server is up and reachable from here',
            { cause: Object.assign(new Error('no answer'), { code: 'CONNECTION_LOST' }) },
          ),
        );
      }, ANSWER_WITHIN_MS);
    });
    try {
      return await Promise.race([work(sql), silent]);
    } finally {
      clearTimeout(timer);
    }
  }

  async #open(): Promise<Sql> {
    const { default: postgres } = await import('postgres');
    const { url, schema } = parsePgUrl(this.#o.databaseUrl);
    const sql = postgres(url, {
      // One connection: advisory locks belong to the session that took them, so lock and unlock must share it. A
      // `max: 1` client rather than a reserved connection: see src/store/locks.ts on postgres.js and terminated backends.
      max: 1,
      idle_timeout: 0,
      max_lifetime: 0,
      connect_timeout: ANSWER_WITHIN_MS / 1000,
      onnotice: () => {},
      onclose: () => {
        this.generation++;
      },
      connection: {
        application_name: 'occupancy-sync api-budget',
        ...(schema ? { search_path: `"${schema}"` } : {}),
      },
    });
    try {
      // The table is there after the first run on a database: one look, and the creation only when it is missing. Two
      // processes creating it at once could both fail on the catalogue's unique index: one at a time.
      const [found] = await sql.unsafe<Array<{ table: string | null }>>("SELECT to_regclass('api_budgets')::text AS table");
      if (!found?.table) {
        await sql.begin(async (tx) => {
          await tx.unsafe("SELECT pg_advisory_xact_lock(hashtext('occupancy-sync:api_budgets'))");
          await tx.unsafe(CREATE);
        });
      }
    } catch (error) {
      await sql.end({ timeout: 1 }).catch(() => {});
      const code = String((error as { code?: unknown }).code ?? '');
      // Privileges (42501) are about the table; anything else is about reaching the server.
      const fix =
        code === '42501'
          ? `it cannot create its table api_budgets (${(error as Error).message}). Fix: let the database role create tables in the schema, as migrations do`
          : `its connection to Postgres failed (${(error as Error).message}). Fix: allow each occupancy-sync process one more connection (the budget's slots are session advisory locks), then run again`;
      throw new StoreError(`the API budget of the keys cannot be shared through the database: ${fix}`, { cause: error });
    }
    return sql;
  }

  /**
   * Listens for slots given back by other processes, from the first time a query of this process has to wait for one:
   * a cron run that never waits opens no second connection.
   */
  listen(): void {
    if (this.#listening || this.#closed || !this.#session) return;
    this.#listening = this.#session.then((sql) => this.#subscribe(sql));
  }

  #subscribe(sql: Sql): Promise<{ unlisten: () => Promise<void> } | undefined> {
    return sql
      .listen(CHANNEL, (keyId) => this.#stores.get(keyId)?.notified())
      .then(
        (listener) => listener,
        (error: unknown) => {
          this.#o.logger.warn({ err: error }, `the API budget cannot LISTEN (${(error as Error).message}): processes look for free slots every ${POLL_MS} ms instead`);
          return undefined;
        },
      );
  }

  /** Bounded: CLOSE_WAIT_MS for the work under way and the goodbye, then the session's sockets are destroyed. */
  async close(): Promise<void> {
    this.#closed = true;
    const session = this.#session;
    this.#session = undefined;
    const deadline = performance.now() + CLOSE_WAIT_MS;
    const left = () => Math.max(0, deadline - performance.now());
    const listening = this.#listening;
    await settledWithin(
      Promise.allSettled([...this.#running]).then(async () => (await listening?.catch(() => undefined))?.unlisten()),
      left(),
    );
    // Ending the session drops every slot it still holds; one still connecting is ended as soon as it is.
    await settledWithin(session?.then((sql) => sql.end({ timeout: left() / 1000 }), () => undefined), left());
  }
}

/** Waits for `promise` to settle, or `ms`, whichever comes first; never rejects. */
async function settledWithin(promise: Promise<unknown> | undefined, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise?.catch(() => undefined), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

class PgKeyStore<S extends StoredLimit> implements KeyStore<S> {
  readonly #backend: PgBudgetRows<S>;
  readonly #keyId: string;
  readonly #lockKey: number;
  readonly #o: PgBudgetOptions<S>;
  /** Slots taken on the current session, by slot number: its generation. */
  readonly #held = new Map<number, number>();
  #waiting: Array<() => void> = [];

  constructor(backend: PgBudgetRows<S>, keyId: string, lockKey: number, options: PgBudgetOptions<S>) {
    this.#backend = backend;
    this.#keyId = keyId;
    this.#lockKey = lockKey;
    this.#o = options;
  }

  take(now: number, want: number): Promise<Take<S>> {
    return this.#backend.use((sql) => this.#take(sql, now, want));
  }

  async #take(sql: Sql, now: number, want: number): Promise<Take<S>> {
    const run = () =>
      sql.unsafe<Array<{ state: S; slots: number[]; held: string }>>(TAKE, [
        this.#keyId,
        this.#lockKey,
        now,
        this.#o.maxInFlight,
        this.#o.adaptive,
        this.#mine(),
        want,
      ]);
    let [row] = await run();
    if (!row) {
      await sql.unsafe('INSERT INTO api_budgets (key_id, state) VALUES ($1, $2) ON CONFLICT (key_id) DO NOTHING', [
        this.#keyId,
        sql.json(this.#o.policy.initial() as never) as never,
      ]);
      [row] = await run();
    }
    const state = this.#o.policy.reconcile(row!.state);
    const slots = row!.slots;
    if (slots.length === 0) return { grants: [], state, why: state.pausedUntil > now ? 'paused' : 'full' };
    const held = Math.max(Number(row!.held), slots.length);
    const grants = slots.map((slot, i) => {
      this.#held.set(slot, this.#backend.generation);
      return { slot, level: held - slots.length + i + 1 };
    });
    return { grants, state };
  }

  /** The slots this process holds on the current session. */
  #mine(): number[] {
    const generation = this.#backend.generation;
    return [...this.#held].filter(([, g]) => g === generation).map(([slot]) => slot);
  }

  async give(slot: number): Promise<void> {
    const generation = this.#held.get(slot);
    this.#held.delete(slot);
    // A slot of an ended session went with it (and may be another process's now): not ours to unlock.
    if (generation !== this.#backend.generation) return;
    await this.#backend
      .use((sql) => sql.unsafe('SELECT pg_advisory_unlock($1::int, $2::int), pg_notify($3, $4)', [this.#lockKey, slot, CHANNEL, this.#keyId]))
      .catch((error: unknown) => {
        // Its session was dropped meanwhile (no answer): the slot went with it, which is all the unlock was for.
        if (this.#backend.generation === generation) throw error;
      });
  }

  update(change: (state: S) => S): Promise<S> {
    return this.#backend.use((sql) => this.#update(sql, change));
  }

  async #update(sql: Sql, change: (state: S) => S): Promise<S> {
    // Compare-and-set: a change another process made in between is read back and the change applied to it.
    for (let tries = 0; ; tries++) {
      const [row] = await sql.unsafe<Array<{ state: S; version: string }>>('SELECT state, version FROM api_budgets WHERE key_id = $1', [this.#keyId]);
      const current = this.#o.policy.reconcile(row!.state);
      const next = change(current);
      if (next === current) return current;
      const written = await sql.unsafe(
        'UPDATE api_budgets SET state = $2, version = version + 1, updated_at = now() WHERE key_id = $1 AND version = $3',
        [this.#keyId, sql.json(next as never) as never, row!.version],
      );
      if (written.count === 1) {
        if (next.pausedUntil !== current.pausedUntil || next.limit !== current.limit) {
          await sql.unsafe('SELECT pg_notify($1, $2)', [CHANNEL, this.#keyId]);
        }
        return next;
      }
      if (tries >= 20) throw new Error(`the API budget's row for a key changed 20 times in a row while this process tried to update it`);
    }
  }

  async reserve(now: number, intervalMs: number, burst: number): Promise<number> {
    const [row] = await this.#backend.use((sql) =>
      sql.unsafe<Array<{ at: number }>>(
        'UPDATE api_budgets SET rate_tat = greatest(rate_tat, $2::float8) + $3::float8 WHERE key_id = $1 ' +
          'RETURNING greatest($2::float8, rate_tat - $3::float8 - ($4::float8 - 1) * $3::float8) AS at',
        [this.#keyId, now, intervalMs, burst],
      ),
    );
    return Number(row!.at);
  }

  changed(ms: number, signal: AbortSignal): Promise<void> {
    this.#backend.listen();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      const waiting = this.#waiting;
      function done() {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        const at = waiting.indexOf(done);
        if (at >= 0) waiting.splice(at, 1);
        resolve();
      }
      waiting.push(done);
    });
  }

  /** Another process gave a slot back or changed the key's state. */
  notified(): void {
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const done of waiting) done();
  }
}
