import { createHash } from 'node:crypto';
import type { Sql } from 'postgres';
import { StoreError } from '../../errors.ts';
import type { Logger } from '../../logger.ts';
import { serial } from '../serial.ts';
import type { Lock } from '../types.ts';

/**
 * Postgres run locks, one per (customer, stream), so two runs never overlap: session-level advisory locks
 * (`pg_try_advisory_lock`), held on one dedicated single-connection client per store (PgLocks). The server drops them
 * when the session ends, so a killed process (kill -9, lost machine) cannot leave one behind. All locks of a store share that session so a partner with many customers does not drain the pool;
 * advisory locks are re-entrant per session, so the store itself refuses a second acquisition of a key it holds.
 */

/** Stable signed 64-bit advisory lock key. `scope` (the Postgres schema) keeps separate datasets independent. */
export function advisoryKey(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\u0000')).digest().readBigInt64BE(0).toString();
}

/** The advisory lock of runs of (customer, stream); `scope` is the Postgres schema ('' for the default). */
export function runLockKey(scope: string, customerId: string, stream: string): string {
  return advisoryKey('occupancy-sync', scope, customerId, stream);
}

/** Who holds an advisory lock: its backend, from pg_locks (the key's two halves) and pg_stat_activity. */
export const ADVISORY_HOLDER = `
  SELECT a.pid, a.application_name, a.backend_start FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
   WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
     AND l.classid = ($1::bigint >> 32)::bit(32)::int::oid AND l.objid = ($1::bigint & 4294967295)::bit(32)::int::oid AND l.objsubid = 1`;

/** Opens the lock session's client; `onclose` is called whenever its one connection closes. */
export type LockClientFactory = (onclose: () => void) => Sql;

/** Waits for a statement within the store's bounds (watch.ts); `lose` destroys its connection when given up. */
export type Track = <T>(pending: PromiseLike<T> & { cancel?(): unknown }, label: string, lose: () => void) => Promise<T>;

/**
 * The Postgres locks of one store, on a dedicated `max: 1` client rather than a connection reserved from the pool:
 * postgres.js 3.4 (up to at least 3.4.9) throws an uncaught TypeError from a setImmediate when a query is sent on a
 * reserved connection whose backend was terminated (porsager/postgres#1208, #1154), which kills the process. A pooled
 * connection that closes is reconnected on its next query instead, and the client's `onclose` tells us the session,
 * and with it every lock it held, is gone. Then:
 * - the locks count as lost: lockLost(customer) names them, and the store refuses to commit pages for that customer
 *   (another run may already hold the lock), so the run fails cleanly with a StoreError;
 * - releasing a lost lock is a no-op (the server already dropped it);
 * - the client reconnects for the next tryLock, on a new session.
 * The check costs a Map lookup per page. It cannot see a termination whose close event has not reached this process
 * yet (at most one page after the lock is lost); pages are idempotent upserts and the watermark only moves forward,
 * so such an overlap rewrites equal rows and never loses any.
 */
export class PgLocks {
  readonly #open: LockClientFactory;
  readonly #scope: string;
  readonly #logger: Logger | undefined;
  /** Locks held on the current session: key -> owner. */
  readonly #held = new Map<string, { customerId: string; stream: string }>();
  /** Locks whose session ended while held, until their holder releases them: key -> owner. */
  readonly #lost = new Map<string, { customerId: string; stream: string }>();
  readonly #exclusive = serial();
  readonly #track: Track;
  #client: Sql | undefined;
  #closed = false;

  constructor(open: LockClientFactory, scope: string, logger?: Logger, track: Track = (pending) => Promise.resolve(pending)) {
    this.#open = open;
    this.#scope = scope;
    this.#logger = logger;
    this.#track = track;
  }

  tryLock(customerId: string, stream: string): Promise<Lock | undefined> {
    const key = runLockKey(this.#scope, customerId, stream);
    return this.#exclusive(async () => {
      if (this.#closed) throw new StoreError('the store was closed: no run lock can be taken on it');
      if (this.#held.has(key) || this.#lost.has(key)) return undefined;
      const client = (this.#client ??= this.#connect());
      let row: { ok: boolean } | undefined;
      try {
        [row] = await this.#track(client.unsafe<{ ok: boolean }[]>('SELECT pg_try_advisory_lock($1::bigint) AS ok', [key]), `taking the run lock of ${customerId}/${stream}`, () => this.#drop(client));
      } finally {
        if (!row?.ok) await this.#endIfIdle();
      }
      if (!row?.ok) return undefined;
      this.#held.set(key, { customerId, stream });
      let released = false;
      return {
        release: () =>
          this.#exclusive(async () => {
            if (released) return;
            released = true;
            if (this.#lost.delete(key) || !this.#held.delete(key)) return;
            try {
              await this.#track(client.unsafe('SELECT pg_advisory_unlock($1::bigint)', [key]), `releasing the run lock of ${customerId}/${stream}`, () => this.#drop(client));
            } catch (error) {
              // The session ended under the unlock: the server dropped the lock with it.
              if (!isConnectionEnded(error)) throw error;
            } finally {
              await this.#endIfIdle();
            }
          }),
      };
    });
  }

  /** Why commits for this customer must stop (a lock of theirs was lost with its session), or undefined. */
  lockLost(customerId: string): string | undefined {
    for (const owner of this.#lost.values()) {
      if (owner.customerId === customerId) {
        return (
          `the run lock of ${owner.customerId}/${owner.stream} was lost: its database session ended (terminated by ` +
          'an administrator, a failover or a network error), so another run may hold it now; stopping before ' +
          'committing more pages. The next run resumes from the last checkpoint'
        );
      }
    }
    return undefined;
  }

  /**
   * Drops every lock by ending the lock session (the store's close()). Not queued behind a lock operation under way:
   * one waiting on a silent server must not hold the close up; ending the session ends it (and its locks) too.
   */
  close(): Promise<void> {
    this.#closed = true;
    this.#held.clear();
    this.#lost.clear();
    return this.#end();
  }

  /**
   * The server is judged gone (watch.ts): the lock session is as silent as the one that stopped answering, so it is
   * dropped now, its locks counted lost, rather than each release waiting to find that out on its own.
   */
  abandon(): void {
    if (this.#client) this.#drop(this.#client);
  }

  #connect(): Sql {
    const client: Sql = this.#open(() => {
      if (client === this.#client) this.#loseHeld();
    });
    return client;
  }

  /** The session's locks are gone with it: their runs stop committing (lockLost). */
  #loseHeld(): void {
    if (this.#held.size === 0) return;
    for (const [key, owner] of this.#held) this.#lost.set(key, owner);
    this.#logger?.error(
      { locks: [...this.#held.values()].map((o) => `${o.customerId}/${o.stream}`) },
      'the database session holding the run locks ended: the locks are lost, runs holding them stop committing',
    );
    this.#held.clear();
  }

  /** A lock session that stopped answering (watch.ts) is dropped, and its locks with it; the next tryLock opens another. */
  #drop(client: Sql): void {
    if (client === this.#client) {
      this.#loseHeld();
      this.#client = undefined;
    }
    void client.end({ timeout: 0 }).catch(() => undefined);
  }

  async #endIfIdle(): Promise<void> {
    if (this.#held.size === 0 && this.#lost.size === 0) await this.#end();
  }

  async #end(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    await client?.end({ timeout: CLOSE_WAIT_SECONDS }).catch(() => undefined);
  }
}

/**
 * How long ending a session waits for what is still in flight on it and for the server's goodbye before its sockets
 * are destroyed (postgres.js `end({ timeout })`): every close of the store is bounded by it, whatever the server does.
 */
export const CLOSE_WAIT_SECONDS = 2;

/** postgres.js's errors for a connection that closed or was ended, and the server's for a terminated backend. */
export function isConnectionEnded(error: unknown): boolean {
  const code = (error as { code?: string }).code ?? '';
  return /^CONNECTION_/.test(code) || code === '57P01' || code === '57P02' || code === '57P03' || code === 'ECONNRESET';
}
