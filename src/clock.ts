/** Injected time source. Everything that depends on "now" (token expiry, sync windows, signature tolerance) takes a Clock. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that only moves when told to: tests use it instead of sleeping. */
export class FakeClock implements Clock {
  #ms: number;
  constructor(start: number | Date | string = Date.UTC(2026, 0, 1)) {
    this.#ms = typeof start === 'number' ? start : new Date(start).getTime();
  }
  now(): number {
    return this.#ms;
  }
  advance(ms: number): void {
    this.#ms += ms;
  }
  set(ms: number | Date | string): void {
    this.#ms = typeof ms === 'number' ? ms : new Date(ms).getTime();
  }
}
