/**
 * The suite's waits. Each has a timeout and names what it waited for, so a stuck test fails with a sentence instead
 * of running into vitest's own timeout: `timed out after 30000 ms waiting for three committed pages`.
 */

export const DEFAULT_TIMEOUT_MS = 30_000;

/** A wait that ran out of time; `what` is the thing waited for. */
export class WaitTimeout extends Error {
  constructor(
    readonly what: string,
    readonly timeoutMs: number,
    detail = '',
  ) {
    super(`timed out after ${timeoutMs} ms waiting for ${what}${detail ? `\n${detail}` : ''}`);
    this.name = 'WaitTimeout';
  }
}

/**
 * Settles like `promise`, or rejects with a WaitTimeout naming `what` after `timeoutMs`. `detail()` is added to the
 * timeout's message (a child's output, say).
 */
export async function within<T>(promise: Promise<T>, what: string, timeoutMs = DEFAULT_TIMEOUT_MS, detail?: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new WaitTimeout(what, timeoutMs, detail?.())), timeoutMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export interface PollOptions {
  /** Pause between checks (default 25 ms; 0: the next turn of the event loop). */
  everyMs?: number;
  /** Stop waiting once this settles (a child's exit): waitFor then resolves false instead of timing out. */
  unless?: Promise<unknown>;
}

/**
 * The one polling wait, for conditions nothing announces (rows in a database, a counter in another object): checks
 * at once, then every `everyMs`, until `check` returns true (resolves true), `unless` settles first (resolves
 * false), or `timeoutMs` passes (rejects with a WaitTimeout naming `what`). A check that throws fails the wait.
 */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = DEFAULT_TIMEOUT_MS,
  options: PollOptions = {},
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  let stopped = false;
  void options.unless?.then(
    () => (stopped = true),
    () => (stopped = true),
  );
  for (;;) {
    if (await check()) return true;
    if (stopped) return false;
    if (Date.now() >= deadline) throw new WaitTimeout(what, timeoutMs);
    const pause = Math.min(options.everyMs ?? 25, Math.max(0, deadline - Date.now()));
    await new Promise((resolve) => (pause === 0 ? setImmediate(resolve) : setTimeout(resolve, pause)));
  }
}
