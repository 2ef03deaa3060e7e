/**
 * Which test files run on which Node line (docs/testing.md, .ci/run).
 *
 * The project's Node line (24, the `node` devDependency) runs every file: that is the README's `npm test`. Every other
 * line CI tests (22) runs the RUNTIME files without the ONCE files (`TEST_SET=runtime npx vitest run`): the files
 * whose code meets the Node runtime itself, where a Node line can differ: HTTP clients and servers (undici, the
 * receiver's and the sandbox's node:http), TLS, zlib, crypto (HMAC, tokens), the SQLite driver (a native addon built
 * per Node line) and the Postgres driver's sockets, child processes and signals. The files left to the project's line
 * test the engine, the definitions, the reports and the docs through those same paths: pure logic on any Node line.
 *
 * ONCE files are soaks and benchmarks (many customers, many deliveries, figures): what they prove is load and pacing,
 * not the runtime's behaviour, so one run per CI is enough. LOGIC files are RUNTIME by their folder and logic by what
 * they test: the project's line alone too.
 *
 * A new test file runs on the project's line only until it is listed here: list it when it meets the runtime.
 */

export const RUNTIME: string[] = [
  // The API client (undici, gzip, HMAC-signed tokens, a budget shared by processes).
  'test/api/**/*.test.ts',
  // The receiver: node:http, TLS, gzip, signatures; the sandbox's HTTP server.
  'test/webhooks/**/*.test.ts',
  'test/sandbox/**/*.test.ts',
  // Both database drivers: SQLite files (native addon), Postgres sockets; processes that open one database together.
  'test/store/**/*.test.ts',
  // The recording proxy and replay (HTTP, gzip, a child process it signals).
  'test/record/**/*.test.ts',
  // The daemon and the CLI as child processes: signals, exit codes, what they print.
  'test/serve/**/*.test.ts',
  'test/cli/**/*.test.ts',
  'test/sync/crash-sqlite.test.ts',
  'test/sync/crash-postgres.test.ts',
  'test/sync/concurrency.test.ts',
  // The sandbox over HTTP, the receiver, both databases: the aggregates kept and rebuilt.
  'test/sync/aggregates-rebuild.test.ts',
  // A fan-out stream's partitions on a SQLite file.
  'test/sync/partitioned.test.ts',
  'test/sync/crash-fanout-sqlite.test.ts',
  'test/sync/crash-fanout-postgres.test.ts',
  'test/definitions/per-space.test.ts',
  // A declared table synced from the sandbox over HTTP into SQLite and Postgres, by the CLI.
  'test/definitions/declared-table.test.ts',
  // The hierarchy's listings from the sandbox over HTTP into both databases, and an API without them.
  'test/sync/hierarchy.test.ts',
  // HTTP framing, streaming, floods of gzip, a misbehaving server, processes killed and databases gone.
  'test/reliability/webhook-http.test.ts',
  'test/reliability/webhook-stream.test.ts',
  'test/reliability/webhook-flood.test.ts',
  'test/reliability/webhook-linger.test.ts',
  'test/reliability/webhook-serve.test.ts',
  'test/reliability/misbehaving-api.test.ts',
  'test/reliability/crash-resume.test.ts',
  'test/reliability/database-gone.test.ts',
  'test/reliability/secrets.test.ts',
  // The time-weighted views on SQLite files and Postgres.
  'test/report/time-weighted-views.test.ts',
  // The sandbox's HTTP server and the CLI's sync, then the views on both dialects.
  'test/report/sandbox-views.test.ts',
  // Headless Chromium as a child process.
  'test/report/html.test.ts',
];

export const ONCE: string[] = [
  'test/serve/scale-queue.test.ts',
  'test/serve/health-scale.test.ts',
  'test/bench/**/*.test.ts',
  'test/reliability/webhook-load.test.ts',
  'test/reliability/sync-faults.test.ts',
  'test/reliability/clock.test.ts',
  // Kills at 20 seeded points: a soak of what test/sync/crash-sqlite.test.ts and crash-postgres.test.ts prove once.
  'test/reliability/crash-resume.test.ts',
];

/**
 * Files inside the RUNTIME globs that test logic, not the runtime: the time-weighted aggregates' SQL and bookkeeping,
 * the dimensions, the migrations' journal. They reach the drivers only through statements the other store files run
 * on every line, so like ONCE they run on the project's line only.
 */
export const LOGIC: string[] = [
  'test/store/aggregate*.test.ts',
  'test/store/page-invalidations.test.ts',
  'test/store/invalidation-ranges.test.ts',
  'test/store/floor-rollup.test.ts',
  'test/store/floor-ranges.test.ts',
  'test/store/run-refresh.test.ts',
  'test/store/delivery-refresh.test.ts',
  'test/store/dimension*.test.ts',
  'test/store/migration-journal.test.ts',
];
