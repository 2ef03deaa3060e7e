import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';
import { LOGIC, ONCE, RUNTIME } from './test/node-lines.ts';

// .ci/run sets VITEST_JSON_REPORT so it can print the runner's own pass/fail counts as its last line.
const jsonReport = process.env.VITEST_JSON_REPORT;

// TEST_SET=runtime: the files another Node line runs (test/node-lines.ts, docs/testing.md); unset: every file.
const set = process.env.TEST_SET ?? 'all';
if (set !== 'all' && set !== 'runtime') {
  throw new Error(`TEST_SET=${JSON.stringify(set)} in the environment: use "runtime" (the files every Node line runs) or leave it unset (every file)`);
}

export default defineConfig({
  test: {
    include: set === 'runtime' ? RUNTIME : ['test/**/*.test.ts'],
    // The package test packs and installs the tarball: `npm run test:package` (vitest.package.config.ts).
    exclude: [...configDefaults.exclude, 'test/package/**', ...(set === 'runtime' ? [...ONCE, ...LOGIC] : [])],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Files run in parallel worker processes; each test uses its own SQLite file, Postgres schema and sandbox port.
    pool: 'forks',
    // Vitest's default leaves one core free: one file at a time on a 2-core machine. Most files wait on servers, child
    // processes and timers more than they compute, so at least two run at once (docs/testing.md has the timings).
    maxWorkers: Math.max(2, availableParallelism()),
    // The reliability suite's log audit: every test file's log lines are captured and searched for secrets.
    globalSetup: ['test/global-setup.ts', 'test/reliability/log-capture.global.ts'],
    setupFiles: ['test/reliability/log-capture.setup.ts'],
    reporters: jsonReport ? ['default', ['json', { outputFile: jsonReport }]] : ['default'],
  },
});
