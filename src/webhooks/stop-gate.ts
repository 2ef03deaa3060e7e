import { Refusal } from './refusal.ts';

/** What a request in flight may be waiting for when the handler stops. */
export type WaitingFor = 'body' | 'database';

/**
 * The handler's stop switch (docs/webhooks.md, Stopping): what a request awaits goes through `until`, and `stop()`
 * answers every such wait at once with 503 `stopping` naming what it was waiting for, and any later one too.
 */
export class StopGate {
  #stopped = false;
  readonly #waiting = { body: 0, database: 0 };
  readonly #onStop = new Set<() => void>();

  get stopped(): boolean {
    return this.#stopped;
  }

  /** Requests waiting now, by what they wait for. */
  get waiting(): { body: number; database: number } {
    return { ...this.#waiting };
  }

  /** Refuses at once (503 `stopping`, waiting for nothing) once stopped. */
  check(): void {
    if (this.#stopped) throw new Refusal(503, 'stopping', { waitingFor: 'nothing' });
  }

  /** `promise`, unless the handler stops first: then a 503 `stopping` naming what the request was waiting for. */
  until<T>(promise: Promise<T>, what: WaitingFor): Promise<T> {
    // What is abandoned still settles (the body when its connection closes, the write when the database answers).
    promise.catch(() => {});
    const refusal = () => new Refusal(503, 'stopping', { waitingFor: what });
    if (this.#stopped) return Promise.reject(refusal());
    this.#waiting[what] += 1;
    return new Promise<T>((resolve, reject) => {
      const stop = () => reject(refusal());
      this.#onStop.add(stop);
      promise.then(resolve, reject).finally(() => {
        this.#onStop.delete(stop);
        this.#waiting[what] -= 1;
      });
    });
  }

  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    for (const stop of [...this.#onStop]) stop();
  }
}

/** Requests being handled, and who waits for there to be none (graceful shutdown). */
export class InFlight {
  #count = 0;
  #waiters: Array<() => void> = [];

  get count(): number {
    return this.#count;
  }

  enter(): void {
    this.#count += 1;
  }

  leave(): void {
    this.#count -= 1;
    if (this.#count > 0) return;
    const done = this.#waiters;
    this.#waiters = [];
    for (const resolve of done) resolve();
  }

  idle(): Promise<void> {
    return this.#count === 0 ? Promise.resolve() : new Promise<void>((resolve) => this.#waiters.push(resolve));
  }
}
