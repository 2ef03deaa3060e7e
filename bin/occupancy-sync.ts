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
// A promise chain rather than top-level await, which Nodes before 14.8 cannot parse.
void Promise.all([import('../src/cli/main.ts'), import('../src/cli/exit.ts')]).then(([{ main }, { exitAfterGrace }]) =>
  main(process.argv, { startedAtMs: 0 }).then(exitAfterGrace),
);
