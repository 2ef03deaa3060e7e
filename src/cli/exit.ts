/** After a command returned, how long a socket left open may keep the process before it exits anyway. */
export const EXIT_GRACE_MS = 200;

/**
 * Ends the process with `code` once a command returned. The command has waited for everything that matters, each
 * wait bounded (docs/reliability.md, "Exits"). What can be left is a socket that a library ends politely and then
 * waits on for the peer's goodbye (postgres.js, pg, the OTLP exporter's retries), or one a close bounded by its own
 * limit gave up on: it must not keep a finished command alive. The timer does not itself hold the process, so a
 * clean exit is not delayed; output still being written (a pipe is asynchronous on some systems) is waited for.
 */
export function exitAfterGrace(code: number): void {
  process.exitCode = code;
  const exitOnceWritten = () => {
    if (process.stdout.writableLength > 0 || process.stderr.writableLength > 0) setTimeout(exitOnceWritten, EXIT_GRACE_MS).unref();
    else process.exit(code);
  };
  setTimeout(exitOnceWritten, EXIT_GRACE_MS).unref();
}
