import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.ts';
import { runMain } from '../support/cli.ts';
import { DIALECTS, freshDatabase, openTestStore, type TestDatabase } from '../support/databases.ts';
import { ROOT } from '../support/process.ts';

/**
 * The README's first look at the hierarchy (Quick start, "What the demo keeps") is true: its SQL, run on the
 * database `demo` fills, answers exactly the rows the README prints first, on SQLite and on Postgres.
 */

const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const HEADING = '### What the demo keeps';

/** The first fenced block of `kind` after the heading. */
function fenced(kind: string): string {
  const start = README.indexOf(HEADING);
  expect(start, HEADING).toBeGreaterThan(0);
  const open = README.indexOf('```' + kind + '\n', start);
  expect(open, `a \`\`\`${kind} block after ${HEADING}`).toBeGreaterThan(start);
  return README.slice(open + kind.length + 4, README.indexOf('```', open + kind.length + 4));
}

const SQL = fenced('sql');
/** The rows as the README prints them: `building | time_zone | ...` per line, the header first, `...` at the end. */
const PRINTED = fenced('text').split('\n').filter(Boolean);

const cell = (v: unknown) => (v === null || v === undefined ? 'NULL' : String(v));

describe.each(DIALECTS)('README: the hierarchy the demo keeps (%s)', (dialect) => {
  let db: TestDatabase | undefined;
  afterEach(async () => {
    await db?.drop();
    db = undefined;
  });

  it('the README\'s query answers the rows it prints', async () => {
    db = await freshDatabase(dialect, 'readme-hierarchy');
    const demo = await runMain(['demo', '--database', db.url, '--days', '1'], {});
    expect(demo.code, demo.stderr).toBe(ExitCode.OK);
    const store = await openTestStore(db);
    try {
      const rows = await store.query<Record<string, unknown>>(SQL);
      const header = PRINTED[0]!.split('|').map((c) => c.trim());
      const lines = rows.map((r) => header.map((h) => cell(r[h])).join(' | '));
      const shown = PRINTED.slice(1).filter((l) => l.trim() !== '...');
      expect(rows.length).toBeGreaterThan(shown.length);
      expect(lines.slice(0, shown.length)).toEqual(shown.map((l) => l.split('|').map((c) => c.trim()).join(' | ')));
    } finally {
      await store.close();
    }
  });
});
