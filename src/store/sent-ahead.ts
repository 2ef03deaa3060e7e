/**
 * A transaction's statements sent ahead of their answers (Executor.runAhead, the rows of an upsert): the connection
 * runs them in the order sent, so the first that failed, in that order, is the statement that failed; those after it
 * only saw the aborted transaction. SQLite's writer thread (sqlite/transactions.ts) and a Postgres transaction
 * (postgres/pool.ts) keep them here until COMMIT.
 */
export class SentAhead {
  readonly #sent: Promise<unknown>[] = [];

  send(outcome: Promise<unknown>): void {
    outcome.catch(() => {});
    this.#sent.push(outcome);
  }

  /** Waits for every statement sent; rejects with the first that failed, in the order sent. */
  async settle(): Promise<void> {
    for (const outcome of this.#sent) await outcome;
  }

  /** Waits for every statement sent: the errors of those that failed, in the order sent. */
  async failures(): Promise<unknown[]> {
    const out: unknown[] = [];
    for (const outcome of this.#sent) await outcome.then(() => undefined, (error: unknown) => void out.push(error));
    return out;
  }
}
