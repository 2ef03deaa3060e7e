#!/usr/bin/env node
// The CLI's entry module: compiled to dist/bin/occupancy-sync.js, which the package's command
// (bin/occupancy-sync.cjs) loads and systemd units start directly; in a clone the command runs this file through tsx.
// Its static imports exist on every Node that reads ES modules (no named import such as enableCompileCache, which
// Node 20 lacks: the module would fail to link before a line runs), so that a too-old Node reaches the check below.
import nodeModule from 'node:module';
import nodeVersion from '../src/cli/node-version.cjs';

if (nodeVersion.tooOld(process.versions.node)) {
  process.stderr.write(`${nodeVersion.refusal(process.versions.node, nodeVersion.INSTALLED_FIX)}\n`);
  process.exit(nodeVersion.EXIT_CODE);
}
// V8's compiled code for our modules and dependencies is kept (in NODE_COMPILE_CACHE, or a directory under
// os.tmpdir()), so later starts skip compiling them; it must be on before the CLI's modules load.
nodeModule.enableCompileCache();
/** After main() returned, how long a socket left open may keep the process before it exits anyway. */
const EXIT_GRACE_MS = 200;
// A promise chain rather than top-level await, which Nodes before 14.8 cannot parse.
void import('../src/cli/main.ts')
  .then(({ main }) => main(process.argv, { startedAtMs: 0 }))
  .then((code) => {
    process.exitCode = code;
    // main() has waited for everything that matters, each wait bounded (docs/reliability.md, "Exits"). What can be
    // left is a socket on a silent network path that a library ends politely and then waits on for the peer's
    // goodbye (postgres.js, pg, the OTLP exporter's retries): it must not keep a finished command alive. The timer
    // does not itself hold the process, so a clean exit is not delayed; output still being written (a pipe is
    // asynchronous on some systems) is waited for.
    const exitOnceWritten = () => {
      if (process.stdout.writableLength > 0 || process.stderr.writableLength > 0) setTimeout(exitOnceWritten, EXIT_GRACE_MS).unref();
      else process.exit(code);
    };
    setTimeout(exitOnceWritten, EXIT_GRACE_MS).unref();
  });
