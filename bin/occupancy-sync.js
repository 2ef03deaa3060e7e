#!/usr/bin/env node
// The package ships TypeScript sources and runs them through tsx, so a fresh clone works right after `npm install`
// with no build step and no build output to keep in sync.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv);
