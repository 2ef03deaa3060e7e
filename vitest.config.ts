import { configDefaults, defineConfig } from 'vitest/config';

// .ci/run sets VITEST_JSON_REPORT so it can print the runner's own pass/fail counts as its last line.
const jsonReport = process.env.VITEST_JSON_REPORT;

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The package test packs and installs the tarball: `npm run test:package` (vitest.package.config.ts).
    exclude: [...configDefaults.exclude, 'test/package/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Files run in parallel worker processes; each test uses its own SQLite file, Postgres schema and sandbox port.
    pool: 'forks',
    // The reliability suite's log audit: every test file's log lines are captured and searched for secrets.
    globalSetup: ['test/global-setup.ts', 'test/reliability/log-capture.global.ts'],
    setupFiles: ['test/reliability/log-capture.setup.ts'],
    reporters: jsonReport ? ['default', ['json', { outputFile: jsonReport }]] : ['default'],
  },
});
