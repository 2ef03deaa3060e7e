import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { arrayLiteral } from '../../src/store/postgres/unnest.ts';
import { PG_BASE_URL } from '../support/databases.ts';

/**
 * The store writes a Postgres page's columns as array literals (src/store/postgres/unnest.ts arrayLiteral): what the
 * server reads back must be every value as given, text that quotes or escapes included; anything the literal cannot
 * say is left to postgres.js.
 */
const pg = postgres(PG_BASE_URL, { max: 1, onnotice: () => {} });
afterAll(() => pg.end({ timeout: 5 }));

const TEXTS = ['plain', '', 'NULL', 'null', 'a,b', '{braces}', 'say "hi"', 'back\\slash', '\\"', ' lead and trail ', 'tab\tnew\nline', 'ünïcödé ✓', "it's", '"', '\\'];

describe('arrayLiteral', () => {
  it('text, with what an array literal quotes or escapes, reads back as given (a real Postgres)', async () => {
    const literal = arrayLiteral([...TEXTS, null])!;
    const rows = await pg.unsafe<{ v: string | null }[]>('SELECT v FROM unnest($1::text[]) WITH ORDINALITY AS u(v, n) ORDER BY n', [literal] as never[]);
    expect(rows.map((r) => r.v)).toEqual([...TEXTS, null]);
  });

  it('integers, floats, booleans, timestamps and nulls read back by the declared type (as the server prints them)', async () => {
    const [row] = await pg.unsafe<Record<string, string>[]>(
      'SELECT $1::int4[]::text AS i, $2::int8[]::text AS b, $3::float8[]::text AS f, $4::bool[]::text AS t, (SELECT array_agg(to_char(x AT TIME ZONE \'UTC\', \'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"\')) FROM unnest($5::timestamptz[]) AS x)::text AS ts',
      [arrayLiteral([1, -2, null, 2147483647]), arrayLiteral([1764000000000, null]), arrayLiteral([0.1, 1e-7, -3.5]), arrayLiteral([true, false, null]), arrayLiteral(['2026-03-02T08:00:00.123Z', '2026-11-29T23:59:59.999Z'])] as never[],
    );
    expect(row).toEqual({ i: '{1,-2,NULL,2147483647}', b: '{1764000000000,NULL}', f: '{0.1,1e-07,-3.5}', t: '{t,f,NULL}', ts: '{2026-03-02T08:00:00.123Z,2026-11-29T23:59:59.999Z}' });
  });

  it('an empty column is {}; a value it cannot write leaves the column to postgres.js', () => {
    expect(arrayLiteral([])).toBe('{}');
    for (const odd of [new Date(0), Buffer.from('x'), 1n, Number.NaN, Number.POSITIVE_INFINITY, undefined, { a: 1 }]) expect(arrayLiteral([1, odd])).toBeUndefined();
  });
});
