import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { readRecording } from '../../src/sandbox/replay-load.ts';
import { startReplay } from '../../src/sandbox/replay.ts';
import { userEnv } from '../support/newcomer.ts';
import { ROOT, runCli, spawnCli, spawnProcess } from '../support/process.ts';
import { tempDir } from '../support/tmp.ts';

/**
 * Messages as a new user meets them (issue 36, "Messages a newcomer cannot act on"): the real CLI in a child
 * process, from a working directory of its own, with a user's environment. Each says what was wrong, where, and the
 * fix, once, with the documented exit code. Run from the sources, the program's spelling is `npx occupancy-sync`.
 */

const tmp = tempDir('newcomer-messages-');
const NOBODY = { uid: 65534, gid: 65534 };
const TIMEOUT = 30_000;

afterAll(() => tmp.remove());

/** A working directory of its own under the test's directory (searchable by nobody, for the permission cases). */
function workDir(name: string): string {
  const dir = join(tmp.dir, name);
  mkdirSync(dir, { recursive: true });
  chmodSync(tmp.dir, 0o755);
  chmodSync(dir, 0o777);
  return dir;
}

/** Lines of stderr, without the empty last one. */
const linesOf = (text: string) => text.split('\n').filter((l) => l !== '');

/** Occurrences of `needle` in `text`. */
const count = (text: string, needle: string) => text.split(needle).length - 1;

describe('SQLite open failures name DATABASE_URL, the resolved path, what is wrong and the fix, exit 78', () => {
  const run = (cwd: string, args: string[], url: string, as: { uid?: number; gid?: number } = {}) =>
    runCli(args, { cwd, env: userEnv({ DATABASE_URL: url }), ...as, timeoutMs: TIMEOUT });

  /** One line on stderr, beginning with the variable as typed and the path it resolves to, and the exit code 78. */
  function expectLocation(result: { code: number | null; stderr: string }, url: string, path: string, problem: string, fix: string): void {
    expect(result.code, result.stderr).toBe(ExitCode.CONFIG);
    const lines = linesOf(result.stderr);
    expect(lines, result.stderr).toHaveLength(1);
    expect(lines[0]).toContain(`occupancy-sync: DATABASE_URL=${JSON.stringify(url)} (${path}): ${problem}`);
    expect(lines[0]).toContain(`Fix: ${fix}`);
  }

  it('a missing directory, for a command that only reads; a missing file too; a writing command creates both', async () => {
    const dir = workDir('missing');
    const status = await run(dir, ['status'], 'file:./missing-dir/x.db');
    expectLocation(status, 'file:./missing-dir/x.db', join(dir, 'missing-dir/x.db'), `there is no SQLite database there: the directory ${join(dir, 'missing-dir')} does not exist`,
      'run `npx occupancy-sync sync` (or `migrate`), which creates it, or point DATABASE_URL at the file it writes to');
    const report = await run(dir, ['report'], 'file:./x.db');
    expectLocation(report, 'file:./x.db', join(dir, 'x.db'), 'there is no SQLite database there yet', 'run `npx occupancy-sync sync`');
    const migrate = await run(dir, ['migrate'], 'file:./missing-dir/x.db');
    expect(migrate.code, migrate.stderr).toBe(ExitCode.OK);
  }, 60_000);

  it('a directory instead of a file, for reading and for writing', async () => {
    const dir = workDir('directory');
    mkdirSync(join(dir, 'data'));
    for (const command of ['status', 'migrate']) {
      const result = await run(dir, [command], 'file:./data');
      expectLocation(result, 'file:./data', join(dir, 'data'), 'this is a directory, not a SQLite database file', 'name a file in it, e.g. DATABASE_URL=file:./data/occupancy.db');
    }
  }, 60_000);

  it('a file that is not a database, for reading and for writing', async () => {
    const dir = workDir('notadb');
    writeFileSync(join(dir, 'notes.txt'), 'not a database, but long enough to have a header of sorts: '.repeat(20));
    for (const command of ['status', 'migrate']) {
      const result = await run(dir, [command], 'file:./notes.txt');
      expectLocation(result, 'file:./notes.txt', join(dir, 'notes.txt'), 'this file is not a SQLite database', 'point DATABASE_URL at the file occupancy-sync created, or at a new path');
    }
  }, 60_000);

  it('permission denied: a file this user may not read; a directory it may not write, for a writing command', async () => {
    const dir = workDir('permissions');
    expect((await run(dir, ['migrate'], 'file:./secret.db')).code).toBe(ExitCode.OK);
    chmodSync(join(dir, 'secret.db'), 0o600);
    for (const command of ['status', 'migrate']) {
      const result = await run(dir, [command], 'file:./secret.db', NOBODY);
      expectLocation(result, 'file:./secret.db', join(dir, 'secret.db'), 'this user (uid 65534) may not read the file', 'make the file');
    }
    mkdirSync(join(dir, 'locked'));
    chmodSync(join(dir, 'locked'), 0o755);
    const create = await run(dir, ['migrate'], 'file:./locked/new.db', NOBODY);
    expectLocation(create, 'file:./locked/new.db', join(dir, 'locked/new.db'), `this user (uid 65534) may not create a file in ${join(dir, 'locked')}`, 'make that directory writable by this user');
  }, 60_000);

  it('a directory that cannot be made: a symbolic link to nowhere, and a file system that refuses it (procfs) at once, not in an endless loop', async () => {
    const dir = workDir('unmakeable');
    symlinkSync(join(dir, 'nowhere'), join(dir, 'link'));
    const dangling = await run(dir, ['migrate'], 'file:./link/x.db');
    expectLocation(dangling, 'file:./link/x.db', join(dir, 'link/x.db'), `cannot create the directory ${join(dir, 'link')} (it is a symbolic link to ${join(dir, 'nowhere')}, which is not a directory that exists)`,
      `create ${join(dir, 'nowhere')} (writable by this user), or correct the path in DATABASE_URL`);
    // procfs answers mkdir with ENOENT under a directory that exists: Node's recursive mkdir went up and down forever
    // (100% CPU, deaf to SIGTERM), so the run never ended; here it is one try and one line.
    symlinkSync('/proc', join(dir, 'proc'));
    // runCli kills a run past TIMEOUT, which then fails below: a loop is caught without timing the run.
    const proc = await run(dir, ['migrate'], 'file:./proc/occupancy-sync-nope/deeper/x.db');
    expectLocation(proc, 'file:./proc/occupancy-sync-nope/deeper/x.db', join(dir, 'proc/occupancy-sync-nope/deeper/x.db'),
      `cannot create the directory ${join(dir, 'proc/occupancy-sync-nope')} (ENOENT: no such file or directory)`, 'create that directory (writable by this user), or correct the path in DATABASE_URL');
  }, 90_000);
});

describe('usage errors: the worst first, one line, the close match', () => {
  it('an unknown option is named before a required one is missed, with the option it resembles (exit 64)', async () => {
    const dir = workDir('usage');
    const run = (args: string[]) => runCli(args, { cwd: dir, env: userEnv(), timeoutMs: TIMEOUT });
    const typo = await run(['backfill', '--form', '2d']);
    expect(typo.code).toBe(ExitCode.USAGE);
    expect(typo.stderr).toBe("occupancy-sync: unknown option '--form' (did you mean --from?). Fix: use --from; see `npx occupancy-sync backfill --help`\n");
    const nested = await run(['state', 'rewind', '--strem', 'occupancy', '--to', '1d', '--yes']);
    expect(nested.stderr).toBe("occupancy-sync: unknown option '--strem' (did you mean --stream?). Fix: use --stream; see `npx occupancy-sync state rewind --help`\n");
    expect(nested.code).toBe(ExitCode.USAGE);
    const missing = await run(['backfill']);
    expect(missing.code).toBe(ExitCode.USAGE);
    expect(missing.stderr).toBe("occupancy-sync: required option '--from <time>' not specified. Fix: see `npx occupancy-sync backfill --help`\n");
  }, 60_000);
});

describe('a run against the sandbox', () => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 3, customers: 1, dataStart: Math.floor((Date.now() - 6 * 3_600_000) / 300_000) * 300_000, lateArrivalMaxMs: 0 });
  });
  afterAll(async () => {
    await sandbox.close();
  });

  const api = (extra: Record<string, string> = {}) => {
    const c = sandbox.customers[0]!;
    return userEnv({ API_BASE_URL: sandbox.url, API_KEY: c.readKey.key, API_SECRET: c.readKey.secret, CUSTOMER_ID: c.id, SYNC_INITIAL_HISTORY: '3h', ...extra });
  };

  it('a wrong key on a new database: its message once, in a pipe and on a terminal, and no migration lines before it', async () => {
    const dir = workDir('wrong-key');
    const env = api({ API_SECRET: 'not-the-secret-of-this-key-0123456789', DATABASE_URL: 'file:./data/new.db' });
    const piped = await runCli(['sync'], { cwd: dir, env, timeoutMs: TIMEOUT });
    expect(piped.code, piped.stderr).toBe(ExitCode.AUTH);
    expect(count(piped.stderr, 'the platform refused API key'), piped.stderr).toBe(1);
    expect(linesOf(piped.stderr)).toHaveLength(1);
    expect(piped.stderr).toMatch(/buildings, floors, floor-spaces, occupancy: failed: the platform refused API key .*API_SECRET/);
    expect(piped.stderr).not.toContain('migrations');

    // On a terminal (script(1) gives the child a pty): pino-pretty showed the message and err.message besides.
    const cli = join(ROOT, 'bin/occupancy-sync.ts');
    const tsx = join(ROOT, 'node_modules/tsx/dist/loader.mjs');
    const quote = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;
    const command = [process.execPath, '--import', tsx, cli, 'sync'].map(quote).join(' ');
    // Not execFileSync: the sandbox answers from this process's event loop.
    const tty = spawnProcess('script', ['-qec', command, '/dev/null'], { cwd: dir, env: { ...env, DATABASE_URL: 'file:./data/tty.db', TERM: 'dumb' }, name: 'sync on a pty' });
    const exit = await tty.exit(TIMEOUT);
    const terminal = tty.stdout();
    expect(exit.code, terminal).toBe(ExitCode.AUTH);
    expect(count(terminal, 'the platform refused API key'), terminal).toBe(1);
    expect(terminal).not.toContain('migrations');
  }, 60_000);

  it("the sandbox's .env block names the customer, so the report does; weeks are a time; hints spelled as the program runs", async () => {
    const dir = workDir('sandbox-env');
    const child = spawnCli(['sandbox', '--port', '0', '--seed', '4', '--customers', '1', '--days', '1'], { cwd: dir, env: userEnv({ LOG_LEVEL: 'warn' }) });
    try {
      await child.waitForLine('Stop with Ctrl-C or SIGTERM.', 'the sandbox to print its .env block');
      const out = child.stdout();
      const block = out.slice(out.indexOf('API_BASE_URL='), out.indexOf('\n\nEndpoints'));
      const name = /^ {2}(\S.*)\n {4}CUSTOMER_ID/m.exec(out)![1]!;
      expect(block).toContain(`CUSTOMER_NAME=${JSON.stringify(name)}`);
      writeFileSync(join(dir, '.env'), `${block}\nSYNC_INITIAL_HISTORY=2h\nDATABASE_URL=file:./data/demo.db\n`);
      const env = userEnv();
      const sync = await runCli(['sync'], { cwd: dir, env, timeoutMs: TIMEOUT });
      expect(sync.code, sync.stderr).toBe(ExitCode.OK);
      // Two hours synced, all of today: --to now includes today so far (the default ends with yesterday).
      const report = await runCli(['report', '--from', '1w', '--to', 'now', '--format', 'csv'], { cwd: dir, env, timeoutMs: TIMEOUT });
      expect(report.code, report.stderr).toBe(ExitCode.OK);
      expect(report.stdout).toContain(name);
      const help = await runCli(['backfill', '--help'], { cwd: dir, env, timeoutMs: TIMEOUT });
      expect(help.stdout).toContain('$ npx occupancy-sync backfill --from 30d');
      expect(help.stdout).not.toMatch(/^\s+\$ occupancy-sync/m);
    } finally {
      await child.kill();
    }
  }, 60_000);

  it('a replay without the recorded clock: one request, not retried, and the fix that matches the cause, whole', async () => {
    const dir = workDir('replay');
    const recorded = await runCli(['record', '--out', './recording', 'sync'], { cwd: dir, env: api({ DATABASE_URL: 'file:./data/recorded.db' }), timeoutMs: 60_000 });
    expect(recorded.code, recorded.stderr).toBe(ExitCode.OK);
    const recording = readRecording(join(dir, 'recording'));
    const replay = await startReplay({ recording });
    try {
      // As the replay's .env block says, without the NODE_OPTIONS line that sets the clock.
      const env = userEnv({ API_BASE_URL: replay.url, API_KEY: 'recorded-key-1', API_SECRET: 'replay', CUSTOMER_ID: sandbox.customers[0]!.id, SYNC_INITIAL_HISTORY: '3h', DATABASE_URL: 'file:./data/replay.db' });
      const sync = await runCli(['sync'], { cwd: dir, env, timeoutMs: TIMEOUT });
      expect(sync.code, sync.stderr).toBe(ExitCode.FAILURE);
      // Not retried: no request was asked twice.
      expect(replay.stats.notInRecording).toBeGreaterThan(0);
      expect(new Set(replay.stats.missed).size).toBe(replay.stats.missed.length);
      const [problem, ...others] = linesOf(sync.stderr).filter((l) => l.includes('not in the recording'));
      expect(others).toEqual([]);
      expect(problem).toContain("the replayed command runs on its own clock, not the recording's");
      expect(problem).toContain(`Fix: run it with NODE_OPTIONS='--import=data:text/javascript,Date.now=()=>${recording.meta.clock.epochMs}' and a new database`);
      expect(problem).not.toContain('rep.');
      expect(problem).not.toContain('paging.maxPageSize');
    } finally {
      await replay.close();
    }
  }, 90_000);
});

describe('what a replay leaves in a clone', () => {
  it("is ignored by git: the database in ./data, and the API budget's coordinator file beside any database", () => {
    const dir = workDir('clone');
    copyFileSync(join(ROOT, '.gitignore'), join(dir, '.gitignore'));
    execFileSync('git', ['init', '-q'], { cwd: dir });
    mkdirSync(join(dir, 'data'));
    for (const file of ['data/replay.db', 'data/replay.db-api-budget', 'replay.db', 'replay.db-api-budget', 'replay.db-api-budget-wal', 'replay.db-api-budget-shm']) {
      writeFileSync(join(dir, file), '');
    }
    const status = execFileSync('git', ['status', '--porcelain', '--untracked-files=all'], { cwd: dir, encoding: 'utf8' });
    expect(status).toBe('?? .gitignore\n');
  });
});
