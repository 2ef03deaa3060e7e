import { connect } from 'node:net';
import { StoreError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { redactUrl } from '../net.ts';

/**
 * Before a daemon opens a Postgres database: does the server answer at all? postgres.js waits for a server that
 * accepts connections and never answers (a black-holed path, a hung server) until its connect timeout, on a socket
 * that nothing above it can close: a SIGTERM in that time could neither stop the wait nor let the process exit. This
 * probe is a socket of our own, closed the moment the signal comes: it sends Postgres's SSLRequest (8 bytes, before
 * any authentication) and waits for any answer; a refusal or an error counts too (the store then reports it in its
 * own words). Nothing is sent but those 8 bytes.
 */

/** Postgres's SSLRequest: length 8, code 80877103. */
const SSL_REQUEST = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);

export interface WaitOptions {
  signal: AbortSignal;
  logger: Logger;
  /** Fail (StoreError) when nothing answered in this time. Default 30 s, postgres.js's own connect timeout. */
  timeoutMs?: number;
  /** Say what is being waited for once the wait has lasted this long. Default 5 s. */
  noticeMs?: number;
}

/** Resolves 'answered' once the server said anything, 'stopped' when `signal` aborted first. */
export async function waitForPostgres(url: string, options: WaitOptions): Promise<'answered' | 'stopped'> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'answered';
  }
  // A Unix socket (host=/path in the query) is local: nothing to black-hole.
  if (!parsed.hostname || parsed.searchParams.has('host')) return 'answered';
  const shown = redactUrl(url);
  const timeoutMs = options.timeoutMs ?? 30_000;
  const noticeMs = options.noticeMs ?? 5_000;
  if (options.signal.aborted) return 'stopped';
  return new Promise((resolve, reject) => {
    const socket = connect(Number(parsed.port || 5432), parsed.hostname.replace(/^\[|\]$/g, ''));
    const started = Date.now();
    const notice = setTimeout(
      () =>
        options.logger.warn(
          { database: shown, waitedMs: Date.now() - started },
          `waiting for the database at ${shown} to answer before receiving webhooks (it accepts no connection or does not answer); SIGTERM stops the wait`,
        ),
      noticeMs,
    );
    const timeout = setTimeout(
      () =>
        done(() =>
          reject(
            new StoreError(
              `cannot connect to Postgres at ${shown}: no answer within ${Math.round(timeoutMs / 1000)} s. ` +
                'Fix: check the host, port and any firewall between here and the server',
            ),
          ),
        ),
      timeoutMs,
    );
    const done = (settle: () => void) => {
      clearTimeout(notice);
      clearTimeout(timeout);
      options.signal.removeEventListener('abort', onAbort);
      socket.destroy();
      settle();
    };
    const onAbort = () => done(() => resolve('stopped'));
    const answered = () => done(() => resolve('answered'));
    options.signal.addEventListener('abort', onAbort, { once: true });
    socket.once('connect', () => socket.write(SSL_REQUEST));
    socket.once('data', answered);
    socket.once('end', answered);
    socket.once('error', answered);
  });
}
