import { StoreError } from '../../errors.ts';
import type { Logger } from '../../logger.ts';

/**
 * Every wait for Postgres, watched. The server ends a statement that waits for a lock past lock_timeout or runs past
 * statement_timeout, but it cannot answer over a network path that has gone silent (a black hole: no reset, no
 * answer), where TCP would wait a quarter of an hour. So each statement and transaction this store sends is
 * tracked here, and:
 * - once it has waited SAY_AFTER_MS, a warning says what it waits for (a lock and who holds it, the server's work, or
 *   no answer at all), again every SAY_EVERY_MS;
 * - with no answer GIVE_UP_GRACE_MS after the server's own statement_timeout, its connection is taken as lost: it is
 *   destroyed here, and the wait ends with a StoreError that says so;
 * - when the server answers neither the waiting statement nor, twice, a question on a fresh connection, the path to
 *   it is gone: what waits is given up at once, the same way;
 * - cancel() (SIGTERM) asks the server to cancel what is in flight, and what has still not ended CANCEL_GRACE_MS later
 *   is given up the same way; what is sent after it (recording the run, releasing its locks on the way out) gets
 *   CANCEL_GRACE_MS too, so a stop on a silent path ends within a bound (docs/reliability.md, "Exits").
 */

export const SAY_AFTER_MS = 5_000;
const SAY_EVERY_MS = 10_000;
const GIVE_UP_GRACE_MS = 10_000;
const CANCEL_GRACE_MS = 5_000;
const TICK_MS = 500;

export interface WatchOptions {
  logger: Logger | undefined;
  location: string;
  statementTimeoutMs: number;
  /**
   * What the store's waiting statements wait for, asked of the server on a connection of its own; `answered` false
   * when the server did not answer that either.
   */
  describe(): Promise<{ text: string; answered: boolean }>;
  /**
   * The path to the server is judged gone (neither a statement nor a fresh connection answered): the sessions no
   * statement was waiting on (the run locks') are as silent, and are dropped rather than waited on one by one.
   */
  onGone?(): void;
}

/** The server answered neither the waiting statement nor this many questions on a fresh connection: it is gone. */
const UNANSWERED_LIMIT = 2;

/** A wait: a statement (which can be cancelled) or a transaction. */
export interface Waitable<T> extends PromiseLike<T> {
  cancel?(): unknown;
}

interface Entry {
  label: string;
  /** When it started, or last made progress (a transaction: its last statement ended). */
  since: number;
  said: number;
  /** When cancel() asked the server to cancel it. */
  cancelledAt: number | undefined;
  cancel: (() => unknown) | undefined;
  /** Destroys the connection it waits on. */
  lose(): void;
  fail(error: Error): void;
  /** Inside a transaction that is itself tracked: its statements speak for it. */
  parent: Entry | undefined;
}

export interface Tracked<T> extends Promise<T> {
  /** For a transaction: its statements, which keep it alive. */
  entry: Entry;
}

export class StatementWatch {
  readonly #options: WatchOptions;
  readonly #entries = new Set<Entry>();
  #timer: NodeJS.Timeout | undefined;
  #describing = false;
  #unanswered = 0;
  /** When cancel() was called: statements sent after it are given CANCEL_GRACE_MS from their start. */
  #cancelledAt: number | undefined;

  constructor(options: WatchOptions) {
    this.#options = options;
  }

  /** Waits for `waitable` within the bounds above; `lose` destroys the connection it runs on. */
  track<T>(waitable: Waitable<T>, label: string, lose: () => void, parent?: Entry): Tracked<T> {
    const now = performance.now();
    let fail!: (error: Error) => void;
    const lost = new Promise<never>((_, reject) => (fail = reject));
    const entry: Entry = {
      label,
      since: now,
      said: now,
      cancelledAt: this.#cancelledAt === undefined ? undefined : now,
      cancel: waitable.cancel ? () => waitable.cancel!() : undefined,
      lose,
      fail,
      parent,
    };
    this.#entries.add(entry);
    this.#tick();
    const answered = Promise.resolve(waitable).then((value) => {
      this.#unanswered = 0;
      return value;
    });
    const settled = Promise.race([answered, lost]).finally(() => {
      this.#entries.delete(entry);
      if (parent) parent.since = performance.now();
    });
    return Object.assign(settled, { entry });
  }

  /** SIGTERM: the server cancels what is in flight; what does not end within CANCEL_GRACE_MS is given up. */
  cancel(): void {
    const now = performance.now();
    this.#cancelledAt ??= now;
    for (const entry of this.#entries) {
      entry.cancelledAt ??= now;
      Promise.resolve(entry.cancel?.()).catch(() => undefined);
    }
  }

  close(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #tick(): void {
    if (this.#timer || this.#entries.size === 0) return;
    this.#timer = setInterval(() => this.#check(), TICK_MS);
    this.#timer.unref();
  }

  #check(): void {
    if (this.#entries.size === 0) return this.close();
    const now = performance.now();
    let waiting: Entry | undefined;
    for (const entry of this.#entries) {
      const deadline = Math.min(entry.since + this.#options.statementTimeoutMs + GIVE_UP_GRACE_MS, (entry.cancelledAt ?? Infinity) + CANCEL_GRACE_MS);
      if (now >= deadline) {
        this.#giveUp(entry, now);
      } else if (!this.#hasChild(entry) && now - entry.since >= SAY_AFTER_MS && now - entry.said >= SAY_EVERY_MS - TICK_MS) {
        waiting ??= entry;
      }
    }
    if (waiting) void this.#say(waiting, now);
  }

  #giveUp(entry: Entry, now: number): void {
    this.#entries.delete(entry);
    const seconds = Math.round((now - entry.since) / 1000);
    entry.fail(
      new StoreError(
        `no answer from Postgres at ${this.#options.location} for ${seconds} s while ${entry.label}: the server or the network ` +
          'path to it is gone, so the connection was dropped; what was not committed is not stored, and the next run ' +
          'resumes from the last committed page. Fix: check that the server is up and reachable from here',
        { cause: Object.assign(new Error('no answer'), { code: 'CONNECTION_LOST' }) },
      ),
    );
    entry.lose();
  }

  #hasChild(entry: Entry): boolean {
    for (const other of this.#entries) if (other.parent === entry) return true;
    return false;
  }

  async #say(entry: Entry, now: number): Promise<void> {
    if (this.#describing) return;
    this.#describing = true;
    for (const other of this.#entries) if (now - other.since >= SAY_AFTER_MS) other.said = now;
    try {
      const { text, answered } = await this.#options.describe();
      this.#unanswered = answered ? 0 : this.#unanswered + 1;
      this.#options.logger?.warn({ waitedSeconds: Math.round((now - entry.since) / 1000), waitingFor: text }, `waiting for Postgres while ${entry.label}: ${text}`);
      if (this.#unanswered >= UNANSWERED_LIMIT) {
        const at = performance.now();
        for (const waiting of [...this.#entries]) this.#giveUp(waiting, at);
        this.#options.onGone?.();
      }
    } finally {
      this.#describing = false;
    }
  }
}
