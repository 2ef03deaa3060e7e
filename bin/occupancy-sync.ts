#!/usr/bin/env node
// The command-line entry point. The package runs the compiled dist/bin/occupancy-sync.js; in a clone,
// `npm run cli -- <command>` runs these sources through tsx.
import { enableCompileCache } from 'node:module';

// V8's compiled code for our modules and dependencies is kept (in NODE_COMPILE_CACHE, or a directory under
// os.tmpdir()), so later starts skip compiling them; it must be on before the CLI's modules load.
enableCompileCache();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv);
