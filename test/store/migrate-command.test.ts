import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { ROOT } from '../support/process.ts';
import { openTestStore } from '../support/databases.ts';
import { execRaw } from '../support/legacy-database.ts';
import { tempDir } from '../support/tmp.ts';
import { DIALECTS, migrationNames, trackedDatabase } from './harness.ts';

const dirs: Array<{ remove(): void }> = [];
afterEach(() => {
  for (const d of dirs.splice(0)) d.remove();
});

/** docs/examples/declared-tables in a directory of the test's own: its definitions file's path. */
function declaredTablesExample(): string {
  const dir = tempDir('migrate-declared-');
  dirs.push(dir);
  cpSync(join(ROOT, 'docs/examples/declared-tables'), dir.dir, { recursive: true });
  return join(dir.dir, 'occupancy-sync.streams.yaml');
}

function capture() {
  let text = '';
  return { stream: { write: (s: string) => (text += s) }, text: () => text };
}

async function run(args: string[], env: Record<string, string>) {
  const stdout = capture();
  const stderr = capture();
  const code = await main(['node', 'occupancy-sync', ...args], { env, stdout: stdout.stream, stderr: stderr.stream, signal: new AbortController().signal });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

describe.each(DIALECTS)('occupancy-sync migrate on %s', (dialect) => {
  it('applies the migrations, prints them, and reports up to date the second time', async () => {
    const database = await trackedDatabase(dialect, 'cmd');
    const first = await run(['migrate'], { DATABASE_URL: database.url, LOG_LEVEL: 'silent' });
    expect(first).toMatchObject({ code: 0, stderr: '' });
    const names = migrationNames(dialect);
    expect(first.stdout).toContain(`Applied ${names.length} migration${names.length === 1 ? '' : 's'} to ${dialect}`);
    for (const name of names) expect(first.stdout).toContain(`  ${name}\n`);
    const second = await run(['migrate'], { DATABASE_URL: database.url, LOG_LEVEL: 'silent' });
    expect(second).toMatchObject({ code: 0, stdout: expect.stringContaining('Database is up to date') });
  });
});

describe.each(DIALECTS)('occupancy-sync migrate with a DEFINITIONS_FILE on %s', (dialect) => {
  it('creates the declared tables with the migrations, prints each step, and is up to date the second time', async () => {
    const database = await trackedDatabase(dialect, 'cmd_declared');
    const env = { DATABASE_URL: database.url, LOG_LEVEL: 'silent', DEFINITIONS_FILE: declaredTablesExample() };
    const first = await run(['migrate'], env);
    expect(first).toMatchObject({ code: 0, stderr: '' });
    expect(first.stdout).toContain(`Applied ${migrationNames(dialect).length} migrations to ${dialect}`);
    expect(first.stdout).toMatch(/Applied 2 declared-table steps to \S+ .*:\n {2}api_spaces step 1: created api_spaces \(.*capacity.*\)\n {2}api_space_readings step 1: created api_space_readings \(/);
    const store = await openTestStore(database);
    try {
      expect((await store.query<{ n: number | string }>('SELECT count(*) AS n FROM api_spaces')).map((r) => Number(r.n))).toEqual([0]);
    } finally {
      await store.close();
    }
    const second = await run(['migrate'], env);
    expect(second).toMatchObject({ code: 0, stderr: '' });
    expect(second.stdout).toMatch(new RegExp(`^Database is up to date \\(${dialect} .*\\)\\.\\n$`));
  });

  it('a declared field added is a column added; a type changed is refused in one line (exit 78) and nothing changes', async () => {
    const database = await trackedDatabase(dialect, 'cmd_declared_change');
    const file = declaredTablesExample();
    const env = { DATABASE_URL: database.url, LOG_LEVEL: 'silent', DEFINITIONS_FILE: file };
    const example = readFileSync(file, 'utf8');
    const capacity = '      capacity: { path: capacity, type: count, nullable: true }\n';
    expect(example).toContain(capacity);
    writeFileSync(file, example.replace(capacity, ''));
    expect((await run(['migrate'], env)).code).toBe(0);
    writeFileSync(file, example);
    const added = await run(['migrate'], env);
    expect(added).toMatchObject({ code: 0, stderr: '' });
    expect(added.stdout).toMatch(/^Applied 1 declared-table step to .*:\n {2}api_spaces step 2: added column capacity \(integer\) to api_spaces\n$/);
    writeFileSync(file, example.replace(capacity, capacity.replace('type: count', 'type: string')));
    const refused = await run(['migrate'], env);
    expect(refused.code).toBe(78);
    expect(refused.stdout).toBe('');
    const lines = refused.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/api_spaces.*capacity.*Fix: /);
    writeFileSync(file, example);
    expect((await run(['migrate'], env)).stdout).toMatch(/^Database is up to date/);
  });

  it('a declared table refused while migrations were pending: the migrations applied are printed, then the one line (exit 78)', async () => {
    const database = await trackedDatabase(dialect, 'cmd_declared_pending');
    if (database.path) mkdirSync(dirname(database.path), { recursive: true });
    // A table of a declared name that nobody recorded (made by hand) is refused, not taken over (docs/tables.md).
    await execRaw(database, ['CREATE TABLE api_spaces (x integer)']);
    const refused = await run(['migrate'], { DATABASE_URL: database.url, LOG_LEVEL: 'silent', DEFINITIONS_FILE: declaredTablesExample() });
    expect(refused.code).toBe(78);
    expect(refused.stdout).toContain(`Applied ${migrationNames(dialect).length} migrations to ${dialect}`);
    const lines = refused.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/api_spaces/);
  });

  it('a definitions file that does not load exits 78 naming it, before the database is touched', async () => {
    const database = await trackedDatabase(dialect, 'cmd_declared_broken');
    const file = declaredTablesExample();
    writeFileSync(file, 'version: 2\nstreams:\n  - [not a stream\n');
    const broken = await run(['migrate'], { DATABASE_URL: database.url, LOG_LEVEL: 'silent', DEFINITIONS_FILE: file });
    expect(broken.code).toBe(78);
    expect(broken.stderr).toContain(file);
    // Nothing was applied: every migration is still pending.
    const after = await run(['migrate'], { DATABASE_URL: database.url, LOG_LEVEL: 'silent' });
    expect(after.stdout).toContain(`Applied ${migrationNames(dialect).length} migrations`);
  });
});

describe('occupancy-sync migrate', () => {
  it('--help describes the command with examples and exit codes', async () => {
    const help = await run(['migrate', '--help'], {});
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Apply pending database migrations');
    expect(help.stdout).toContain('$ npx occupancy-sync migrate');
    expect(help.stdout).toContain('Exit codes');
    expect(help.stdout).toContain('$ DEFINITIONS_FILE=./occupancy-sync.streams.yaml npx occupancy-sync migrate');
  });

  it('exits 78 with the variable named when DATABASE_URL is unusable', async () => {
    const bad = await run(['migrate'], { DATABASE_URL: 'mysql://x' });
    expect(bad.code).toBe(78);
    expect(bad.stderr).toContain('DATABASE_URL');
  });
});
