// `occupancy-sync serve` in a child process, wired like src/cli/main.ts (signals abort the context's signal) and
// ending as bin/occupancy-sync.ts does (exitAfterGrace: a connection a bounded close gave up on does not hold a finished
// serve), for the tests that send real SIGTERMs and run two instances side by side.
import { buildProgram } from '../../src/cli/main.ts';
import { createContext } from '../../src/cli/context.ts';
import { serveCommand } from '../../src/cli/commands/serve.ts';
import { exitCodeFor } from '../../src/errors.ts';
import { exitAfterGrace } from '../../src/cli/exit.ts';

const controller = new AbortController();
for (const name of ['SIGTERM', 'SIGINT'] as const) process.on(name, () => controller.abort(new Error(`received ${name}`)));
const ctx = createContext(process.env, { stdout: process.stdout, stderr: process.stderr }, controller.signal);
try {
  await buildProgram(ctx, [serveCommand]).parseAsync(['node', 'occupancy-sync', 'serve', ...process.argv.slice(2)]);
  exitAfterGrace(ctx.exitCode);
} catch (error) {
  process.stderr.write(`occupancy-sync: ${(error as Error).message}\n`);
  exitAfterGrace(exitCodeFor(error));
}
