import type { Adapter, Executor } from '../adapter.ts';

type Work<T> = (tx: Executor) => Promise<T>;

interface Pending {
  work: Work<unknown>;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * Group commit: units of work submitted in the same turn of the event loop run in one transaction, and every caller
 * is answered after the shared COMMIT, never before: a webhook delivery is acknowledged only once it is durable.
 *
 * Optimistic: the group runs without a SAVEPOINT per unit. If any unit (or the COMMIT) fails, the whole group rolls
 * back and each unit is replayed alone in its own transaction, so only the unit at fault sees an error and the others
 * are stored as if they had never met it. Failures are rare (the receiver validates before storing), so the replay
 * costs nothing in the common case, while a SAVEPOINT per unit made SQLite copy every page a unit touched into its
 * statement sub-journal first, about twice the cost per occupancy row (figures in docs/performance.md). When the transaction
 * cannot even begin, every unit is rejected with that error at once.
 *
 * Why group at all: on SQLite a write transaction costs a BEGIN IMMEDIATE and a COMMIT that appends to the WAL (and
 * now and then an automatic checkpoint with an fsync); one per webhook delivery was ~0.4 ms of ~1 ms per delivery.
 */
export class GroupCommit {
  readonly #db: Pick<Adapter, 'transaction'>;
  #queue: Pending[] = [];
  #scheduled = false;

  constructor(db: Pick<Adapter, 'transaction'>) {
    this.#db = db;
  }

  /** Runs `work` in the next group's transaction; resolves to its result once that transaction has committed. */
  submit<T>(work: Work<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ work, resolve: resolve as (value: unknown) => void, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        // setImmediate, not a microtask: requests whose bodies completed in the same poll phase join this group.
        setImmediate(() => void this.#flush());
      }
    });
  }

  async #flush(): Promise<void> {
    this.#scheduled = false;
    const group = this.#queue;
    this.#queue = [];
    let results: unknown[];
    let began = false;
    try {
      results = await this.#db.transaction(async (tx) => {
        began = true;
        const values: unknown[] = [];
        for (const unit of group) values.push(await unit.work(tx));
        return values;
      });
    } catch (error) {
      // No transaction at all (the write lock stayed busy past busy_timeout, the database is gone): every unit would
      // fail the same way, and replaying each would wait out the busy timeout once per unit.
      if (group.length === 1 || !began) {
        for (const unit of group) unit.reject(error);
        return;
      }
      for (const unit of group) {
        try {
          unit.resolve(await this.#db.transaction(unit.work));
        } catch (alone) {
          unit.reject(alone);
        }
      }
      return;
    }
    group.forEach((unit, i) => unit.resolve(results[i]));
  }
}
