import { setTimeout as delay } from 'node:timers/promises';

/** The error an aborted operation rejects with: the signal's own reason when it is an Error (e.g. "received SIGTERM"). */
export function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error) return reason;
  return new DOMException(reason === undefined ? 'The operation was aborted' : String(reason), 'AbortError');
}

/**
 * Waits for a shared promise but gives up as soon as *this* caller's signal aborts, without cancelling the work
 * other callers are waiting on (a single-flight token refresh).
 */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(abortError(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortError(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** Real-time sleep that stops at once when the signal aborts. Tests inject their own to record and skip waits. */
export async function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) throw abortError(signal);
  try {
    await delay(ms, undefined, { signal });
  } catch (error) {
    if (signal?.aborted) throw abortError(signal);
    throw error;
  }
}
