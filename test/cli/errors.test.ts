import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterEach, describe, expect, it } from 'vitest';
import { errorLine, loadEnvironment } from '../../src/cli/main.ts';
import { ExitCode, OccupancySyncError } from '../../src/errors.ts';
import { createLogger } from '../../src/logger.ts';
import { freshDatabase, PG_BASE_URL, requirePostgres } from '../support/databases.ts';
import { runCli, spawnCli } from '../support/process.ts';
import { tempDir } from '../support/tmp.ts';
import { runMain } from '../support/cli.ts';

/**
 * Expected failures, as a new user meets them: each is one line on stderr saying what failed, where (host, variable,
 * file) and the fix, with the documented exit code and no stack trace at the default log level.
 */

const cli = runMain;

const CUSTOMER = '6f1c0d2e-8a4b-4c1d-9e2f-0123456789ab';
const tmp = tempDir('cli-errors-');
const base = (extra: Record<string, string>) => ({
  API_KEY: 'key-1',
  API_SECRET: 'a-secret-of-some-length-0123456789',
  CUSTOMER_ID: CUSTOMER,
  DATABASE_URL: `file:${join(tmp.dir, `${Math.random().toString(16).slice(2)}.db`)}`,
  HTTP_MAX_ATTEMPTS: '3',
  HTTP_BACKOFF_MIN: '5ms',
  HTTP_BACKOFF_MAX: '10ms',
  ...extra,
});

/** No line of a stack trace, in plain or JSON output. */
function expectNoStack(output: string): void {
  expect(output).not.toMatch(/^\s+at /m);
  expect(output).not.toMatch(/\\n\s+at /);
  expect(output).not.toContain('"stack"');
}

const servers: Array<Server | ReturnType<typeof createTcpServer>> = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function listen<S extends Server | ReturnType<typeof createTcpServer>>(server: S): Promise<number> {
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as AddressInfo).port;
}

describe('expected failures are one line each: what, where and the fix', () => {
  it('an API that refuses connections: named host and variable, once per customer within the retry budget', async () => {
    let connections = 0;
    const port = await listen(createTcpServer((socket) => {
      connections += 1;
      socket.destroy();
    }));
    const result = await cli(['sync'], base({ API_BASE_URL: `http://127.0.0.1:${port}` }));
    expect(result.code).toBe(ExitCode.FAILURE);
    const lines = result.stderr.split('\n').filter((l) => l.includes('failed:'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^  ${CUSTOMER} buildings, floors, floor-spaces, occupancy: failed: `));
    // One customer, two streams: the token is asked for once, so the retry budget (3 attempts) is spent once.
    expect(connections).toBe(3);
    expectNoStack(result.stderr);

    const refused = await listen(createTcpServer());
    await new Promise((r) => servers.pop()!.close(r));
    const down = await cli(['sync'], base({ API_BASE_URL: `http://127.0.0.1:${refused}` }));
    expect(down.stderr).toContain(
      `failed: cannot reach the platform at http://127.0.0.1:${refused} (API_BASE_URL): connection refused (ECONNREFUSED). Fix: check API_BASE_URL and that this host can reach it (DNS, firewall, proxy)`,
    );
  });

  it('a base URL that answers 404: permanent, one request, the variable and the fix named, a configuration error (78)', async () => {
    let requests = 0;
    const port = await listen(createServer((_req, res) => {
      requests += 1;
      res.writeHead(404, { 'content-type': 'text/html' }).end('<h1>Not Found</h1>');
    }));
    const result = await cli(['sync'], base({ API_BASE_URL: `http://127.0.0.1:${port}/v2` }));
    expect(result.code).toBe(ExitCode.CONFIG);
    expect(result.stderr).toContain(
      `failed: http://127.0.0.1:${port}/v2/api/v1/auth answered HTTP 404: API_BASE_URL does not point at the platform's API. Fix: set API_BASE_URL to the platform's base URL, the part before /api/v1/auth`,
    );
    expect(requests).toBe(1);
    expectNoStack(result.stderr);
  });

  it('Postgres: a missing database, a closed port, and a URL without host or database', async () => {
    await requirePostgres();
    const missing = `${PG_BASE_URL.replace(/\/[^/]*$/, '')}/occupancy_sync_no_such_db`;
    const result = await cli(['migrate'], base({ DATABASE_URL: missing }));
    expect(result.code).toBe(ExitCode.CONFIG);
    expect(result.stderr).toMatch(/^occupancy-sync: applying migrations failed: the database named in DATABASE_URL \(postgres:\/\/\S+\/occupancy_sync_no_such_db\) does not exist\. Fix: create it/);
    const port = await listen(createTcpServer());
    await new Promise((r) => servers.pop()!.close(r));
    const closed = await cli(['migrate'], base({ DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/test` }));
    expect(closed.stderr).toContain(`cannot connect to Postgres at postgres://postgres@127.0.0.1:${port}/test: connection refused. Fix: start Postgres, or correct the host and port in DATABASE_URL`);
    expectNoStack(result.stderr + closed.stderr);
    const bare = await cli(['migrate'], base({ DATABASE_URL: 'postgres://' }));
    expect(bare.code).toBe(ExitCode.CONFIG);
    expect(bare.stderr).toBe('occupancy-sync: DATABASE_URL="postgres://": names no host. Fix: use postgres://user@host:5432/database\n');
    const noDb = await cli(['migrate'], base({ DATABASE_URL: 'postgres://sync:pw@db.example.com:5432' }));
    expect(noDb.stderr).toBe('occupancy-sync: DATABASE_URL="postgres://sync:***@db.example.com:5432": names no database. Fix: add the database name, e.g. postgres://user@host:5432/occupancy\n');
  });

  it('Postgres: a refused login and a role without CREATE are 77, a missing database 78, for every command that opens it', async (context) => {
    await requirePostgres();
    const server = PG_BASE_URL.replace(/\/[^/]*$/, '');
    const admin = postgres(PG_BASE_URL, { max: 1, onnotice: () => {} });
    const role = `ostest_nocreate_${randomBytes(4).toString('hex')}`;
    const db = await freshDatabase('postgres', 'nocreate');
    context.onTestFinished(async () => {
      await db.drop();
      await admin.unsafe(`DROP OWNED BY ${role}; DROP ROLE IF EXISTS ${role}`).catch(() => {});
      await admin.end({ timeout: 5 });
    });
    // Trust authentication for the roles that exist: a role that does not is what the server refuses (28000).
    const nobody = PG_BASE_URL.replace(/^postgres:\/\/[^@/]*@/, `postgres://ostest_nobody_${randomBytes(4).toString('hex')}@`);
    await admin.unsafe(`CREATE ROLE ${role} LOGIN`);
    await admin.unsafe(`GRANT USAGE ON SCHEMA "${db.schema}" TO ${role}`);
    const cases: Array<[string, string, number, RegExp]> = [
      ['a refused login', nobody, ExitCode.AUTH, /Postgres refused the login at postgres:\/\/ostest_nobody_\w+@\S+\/test \(role "ostest_nobody_\w+" does not exist\)\. Fix: correct the user and password in DATABASE_URL/],
      ['a missing database', `${server}/occupancy_sync_no_such_db`, ExitCode.CONFIG, /the database named in DATABASE_URL \(postgres:\/\/\S+\/occupancy_sync_no_such_db\) does not exist\. Fix: create it/],
      ['no CREATE on the schema', db.url.replace(/^postgres:\/\/[^@]*@/, `postgres://${role}@`), ExitCode.AUTH, /the database user lacks a permission at postgres:\/\/ostest_nocreate_\w+@\S+ \(permission denied for schema ostest_nocreate_\w+\)\. Fix: grant it CREATE and USAGE on the schema/],
    ];
    for (const [what, url, code, line] of cases) {
      for (const command of ['sync', 'serve', 'migrate', 'prune', 'status']) {
        // status only reads: the schema it may use holds no tables yet, which is said (78) before any CREATE.
        if (command === 'status' && what === 'no CREATE on the schema') continue;
        const env = base({ DATABASE_URL: url, API_BASE_URL: 'http://127.0.0.1:9', SERVE_HOST: '127.0.0.1', SERVE_PORT: '0', WEBHOOK_HOST: '127.0.0.1', WEBHOOK_PORT: '0' });
        const result = await cli([command], env);
        expect([result.code, result.stderr], `${command}: ${what}`).toEqual([code, expect.stringMatching(line)]);
        expect(result.stderr.trim().split('\n'), `${command}: ${what}`).toHaveLength(1);
        expectNoStack(result.stderr);
      }
    }
  }, 120_000);

  it("Postgres sslmode: a word libpq does not know is configuration (78); TLS asked of a server without it is said so", async () => {
    const bogus = await cli(['migrate'], base({ DATABASE_URL: 'postgres://sync:hunter2pw@127.0.0.1:9/test?sslmode=DISABLE' }));
    expect([bogus.code, bogus.stderr]).toEqual([
      ExitCode.CONFIG,
      'occupancy-sync: DATABASE_URL="postgres://sync:***@127.0.0.1:9/test?sslmode=DISABLE": sslmode="DISABLE" is not an sslmode Postgres knows. ' +
        'Fix: use one of sslmode=disable, allow, prefer, require, verify-ca, verify-full (lower case), or leave sslmode out for no TLS\n',
    ]);
    // A Postgres without TLS: it answers the SSLRequest with N, then drops the connection that starts a handshake anyway.
    const port = await listen(createTcpServer((socket) => {
      socket.once('data', () => {
        socket.write('N');
        socket.once('data', () => socket.destroy());
      });
    }));
    const plain = await cli(['migrate'], base({ DATABASE_URL: `postgres://sync@127.0.0.1:${port}/test?sslmode=require` }));
    expect(plain.code).toBe(ExitCode.FAILURE);
    expect(plain.stderr).toMatch(
      new RegExp(`^occupancy-sync: applying migrations failed: Postgres at postgres://sync@127\\.0\\.0\\.1:${port}/test\\?sslmode=require did not accept TLS, which the sslmode of DATABASE_URL asks for: .*Fix: enable TLS on the server \\(ssl = on\\), or set sslmode=prefer \\(TLS when the server offers it\\) or sslmode=disable in DATABASE_URL\n$`),
    );
    expect(plain.stderr).not.toContain('check that the server is up');
  });

  it('SQLite in a directory this user may not write: the path and the fix, for a writing command; reading still works', async () => {
    const dir = join(tmp.dir, 'readonly');
    mkdirSync(dir);
    chmodSync(tmp.dir, 0o755);
    const path = join(dir, 'data.db');
    const env = { PATH: process.env.PATH ?? '', HOME: tmp.dir, DATABASE_URL: `file:${path}`, LOG_LEVEL: 'warn' };
    // Made as root (the test runner), then read-only for the user the commands run as.
    expect((await cli(['migrate'], env)).code).toBe(ExitCode.OK);
    chmodSync(path, 0o444);
    chmodSync(dir, 0o555);
    const nobody = { uid: 65534, gid: 65534 };
    // A Node this user may not execute (a private directory) fails the test (a spawn error), never hangs it.
    const run = (args: string[]) => runCli(args, { env, ...nobody, timeoutMs: 20_000 });
    const write = await run(['migrate']);
    expect(write.code).toBe(ExitCode.CONFIG);
    expect(write.stderr).toBe(
      `occupancy-sync: DATABASE_URL=${JSON.stringify(`file:${path}`)}: the database is read-only for this user: the file and its directory are not writable by this user (uid 65534) ` +
        '(a command that writes needs both: SQLite keeps its -wal and -shm files beside the database). Fix: make the file and its directory writable by this user, or use a read-only command (status, report, state show)\n',
    );
    expectNoStack(write.stderr);
    const status = await run(['status']);
    expect(status.code, status.stderr).toBe(ExitCode.OK);
    expect(status.stdout).toContain('No sync state yet');
    const state = await run(['state', 'show', '--json']);
    expect(state.code, state.stderr).toBe(ExitCode.OK);
    expect(JSON.parse(state.stdout)).toEqual({ states: [], changes: [] });
  }, 60_000);

  it('aggregates rebuild: a date that does not exist, or is outside the years readings are kept for, names the flag and the fix (exit 64), nothing opened', async () => {
    const cases: Array<[string[], string]> = [
      [['--from', '2026-02-30'], 'occupancy-sync: --from "2026-02-30": not a date in the form YYYY-MM-DD that exists. Fix: write a local date such as 2026-03-01\n'],
      [['--from', '0001-01-01'], 'occupancy-sync: --from 0001-01-01: outside the years readings are kept for (1970 to 2199). Fix: give a local date in them, or leave --from out for the first reading\n'],
      [['--to', '9999-12-31'], 'occupancy-sync: --to 9999-12-31: outside the years readings are kept for (1970 to 2199). Fix: give a local date in them, or leave --to out for the last reading\n'],
      [['--from', '2026-03-02', '--to', '2026-03-01'], 'occupancy-sync: --to 2026-03-01: not after --from 2026-03-02. Fix: give a later --to (the range is [from, to), local dates of each building)\n'],
    ];
    for (const [flags, line] of cases) {
      const result = await cli(['aggregates', 'rebuild', ...flags], base({ DATABASE_URL: 'file:./never/opened.db' }));
      expect([result.code, result.stderr], flags.join(' ')).toEqual([ExitCode.USAGE, line]);
    }
  });

  it('serve: a flag that is not a duration, or flags that leave nothing to serve, are usage (64); a health port in use names SERVE_HOST and SERVE_PORT (78)', async () => {
    for (const [flags, line] of [
      [['--jitter', 'banana'], 'occupancy-sync: --jitter "banana": not a duration. Fix: use e.g. 500ms or 10s\n'],
      [['--max-lag', '-5m'], 'occupancy-sync: --max-lag "-5m": not a duration. Fix: use e.g. 900s, 30m or 2h\n'],
      [['--no-schedule', '--no-webhooks'], 'occupancy-sync: --no-schedule with --no-webhooks leaves nothing to serve. Fix: drop one of them\n'],
    ] as Array<[string[], string]>) {
      const result = await cli(['serve', ...flags], base({}));
      expect([result.code, result.stderr], flags.join(' ')).toEqual([ExitCode.USAGE, line]);
    }
    // The health port taken (closed after the test with the other servers).
    const port = await listen(createServer());
    const result = await cli(['serve', '--no-webhooks'], base({ SERVE_HOST: '127.0.0.1', SERVE_PORT: String(port), API_BASE_URL: 'http://127.0.0.1:9' }));
    expect(result.code, result.stderr).toBe(ExitCode.CONFIG);
    expect(result.stderr).toContain(`SERVE_HOST="127.0.0.1", SERVE_PORT=${port}: cannot listen, another process already listens there. Fix: stop it (another instance?), or choose another port (EADDRINUSE)`);
    expectNoStack(result.stderr);
  });

  it('an option that takes one value, given twice, is a usage error naming both (the last was kept in silence); a repeatable one collects', async () => {
    const twice = await cli(['sync', '--stream', 'occupancy', '--stream', 'buildings'], base({}));
    expect([twice.code, twice.stderr]).toEqual([
      ExitCode.USAGE,
      'occupancy-sync: option \'--stream <name>\' given twice ("occupancy", then "buildings"): it takes one value. Fix: see `npx occupancy-sync sync --help`\n',
    ]);
    const report = await cli(['report', '--from', '7d', '--from', '2d'], base({}));
    expect(report.code).toBe(ExitCode.USAGE);
    expect(report.stderr).toContain('given twice ("7d", then "2d")');
    // An empty value is a value: refused by name, not taken as the option left out.
    for (const [flags, line] of [
      [['--from', ''], 'occupancy-sync: --from "": not an ISO 8601 date or date-time with a zone, a time ago such as 36h or 7d, nor now. Fix: use e.g. 2026-01-01, 2026-01-01T06:00:00Z, 7d (seven days ago) or now\n'],
      [['--html', ' '], 'occupancy-sync: --html "": names no file. Fix: give the file to write, e.g. --html report.html\n'],
    ] as Array<[string[], string]>) {
      const empty = await cli(['report', ...flags], base({}));
      expect([empty.code, empty.stderr], flags.join(' ')).toEqual([ExitCode.USAGE, line]);
    }
    // --header collects: given twice it is two headers (refused here for the missing --url, not for the repeat).
    const headers = await cli(['webhook', 'register', '--header', 'X-A:1', '--header', 'X-B:2'], base({}));
    expect(headers.stderr).not.toContain('given twice');
  });

  it('a bug is shown as one line too, its stack only at LOG_LEVEL=debug', () => {
    const bug = new TypeError("Cannot read properties of undefined (reading 'x')");
    expect(errorLine(bug, 'info')).toBe("unexpected error: Cannot read properties of undefined (reading 'x') (LOG_LEVEL=debug shows where)");
    expect(errorLine(bug, 'debug')).toMatch(/^unexpected error: TypeError: .*\n\s+at /);
    expect(errorLine(new OccupancySyncError('X', 'one line'), 'debug')).toBe('one line');
  });

  it('log lines carry no stack at the default level; NO_COLOR leaves pretty output without colour codes', () => {
    let out = '';
    const write = { write: (s: string) => void (out += s) };
    createLogger({ level: 'info', pretty: false, destination: write }).error({ err: new Error('boom', { cause: new Error('root') }) }, 'failed');
    const line = JSON.parse(out.trim()) as { err: Record<string, unknown> };
    expect(line.err).toEqual({ type: 'Error', message: 'boom', cause: { type: 'Error', message: 'root' } });
    out = '';
    createLogger({ level: 'debug', pretty: false, destination: write }).error({ err: new Error('boom') }, 'failed');
    expect((JSON.parse(out.trim()) as { err: { stack: string } }).err.stack).toMatch(/^Error: boom\n\s+at /);
    out = '';
    createLogger({ level: 'info', pretty: true, color: false, destination: write }).warn('plain');
    expect(out).toMatch(/ WARN \(occupancy-sync\): plain\n$/);
    expect(out).not.toContain('\u001b[');
    out = '';
    createLogger({ level: 'info', pretty: true, color: true, destination: write }).warn('coloured');
    expect(out).toContain('\u001b[');
  });
});

describe('.env in the working directory', () => {
  it('is read when present, under the environment (which wins), and a missing file changes nothing', () => {
    const dir = tempDir('dotenv-');
    try {
      writeFileSync(join(dir.dir, '.env'), '# comment\nSYNC_LOOKBACK=30m\nLOG_LEVEL=debug\nAPI_KEY="quoted value"\n');
      const env = loadEnvironment({ LOG_LEVEL: 'warn' }, dir.dir);
      expect(env).toMatchObject({ SYNC_LOOKBACK: '30m', LOG_LEVEL: 'warn', API_KEY: 'quoted value' });
      expect(loadEnvironment({ A: '1' }, join(dir.dir, 'nowhere'))).toEqual({ A: '1' });
    } finally {
      dir.remove();
    }
  });

  it('is used by the CLI started in that directory', async () => {
    const dir = tempDir('dotenv-cli-');
    try {
      writeFileSync(join(dir.dir, '.env'), `DATABASE_URL=file:${join(dir.dir, 'from-dotenv.db')}\n`);
      const { code, stdout, stderr } = await runCli(['migrate'], { cwd: dir.dir, env: { PATH: process.env.PATH ?? '' }, timeoutMs: 20_000 });
      expect(code, stderr).toBe(0);
      expect(stdout).toContain(join(dir.dir, 'from-dotenv.db'));
    } finally {
      dir.remove();
    }
  });
});

describe('a reader that goes away', () => {
  it('is no crash: `occupancy-sync --help | head -0` exits 0 with no stack trace', async () => {
    // The pipe's reading end is closed before the child starts, so its first write to stdout fails with EPIPE.
    const child = spawnCli(['--help'], { stdout: 'pipe' });
    child.process.stdout?.destroy();
    const exit = await child.exit();
    expect(child.stderr()).not.toContain('EPIPE');
    expectNoStack(child.stderr());
    expect(exit).toEqual({ code: 0, signal: null });
  });
});
