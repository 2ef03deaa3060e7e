import { describe, expect, it } from 'vitest';
import { PgDialect } from 'drizzle-orm/pg-core';
import { SQLiteSyncDialect } from 'drizzle-orm/sqlite-core';
import { sql } from '../../db/schema/drizzle.ts';
import { keyIn, textArray, textIn } from '../../src/store/key-list.ts';

/**
 * keyIn binds a list of keys as one value, so a statement's text is the same whatever the list (each dialect prepares
 * it once). The store's refresh tests run it against both databases; here, the text and what is bound.
 */
describe('keyIn', () => {
  it('binds any number of keys as one array value on Postgres and one JSON array on SQLite, the text unchanged', () => {
    const pg = new PgDialect();
    const lite = new SQLiteSyncDialect();
    const of = (keys: number[]) => ({
      postgres: pg.sqlToQuery(sql`SELECT 1 FROM t WHERE ${keyIn('postgres', sql`k`, keys)}`),
      sqlite: lite.sqlToQuery(sql`SELECT 1 FROM t WHERE ${keyIn('sqlite', sql`k`, keys)}`),
    });
    const few = of([3, 1]);
    const many = of(Array.from({ length: 2000 }, (_, i) => i));
    expect(few.postgres.sql).toBe('SELECT 1 FROM t WHERE k = ANY($1::int4[])');
    expect(few.postgres.params).toEqual(['{3,1}']);
    expect(few.sqlite.sql).toBe('SELECT 1 FROM t WHERE k IN (SELECT value FROM json_each(?))');
    expect(few.sqlite.params).toEqual(['[3,1]']);
    expect(many.postgres.sql).toBe(few.postgres.sql);
    expect(many.sqlite.sql).toBe(few.sqlite.sql);
    expect(of([]).postgres.params).toEqual(['{}']);
  });

  it('refuses what is not an integer key instead of binding it', () => {
    expect(() => keyIn('postgres', sql`k`, [1, 2.5])).toThrow(/2.5 is not an integer key/);
    expect(() => keyIn('sqlite', sql`k`, [Number.NaN])).toThrow(/NaN is not an integer key/);
  });
});

describe('textIn', () => {
  it('binds any number of texts as one value, the text unchanged; Postgres gets every element quoted', () => {
    const pg = new PgDialect();
    const lite = new SQLiteSyncDialect();
    const of = (values: string[]) => ({
      postgres: pg.sqlToQuery(sql`SELECT 1 FROM t WHERE ${textIn('postgres', sql`v`, values)}`),
      sqlite: lite.sqlToQuery(sql`SELECT 1 FROM t WHERE ${textIn('sqlite', sql`v`, values)}`),
    });
    const few = of(['a"b', 'c\\d', 'NULL', 'e,f']);
    const many = of(Array.from({ length: 2000 }, (_, i) => `id-${i}`));
    expect(few.postgres.sql).toBe('SELECT 1 FROM t WHERE v = ANY($1::text[])');
    expect(few.postgres.params).toEqual(['{"a\\"b","c\\\\d","NULL","e,f"}']);
    expect(few.sqlite.sql).toBe('SELECT 1 FROM t WHERE v IN (SELECT value FROM json_each(?))');
    expect(few.sqlite.params).toEqual([JSON.stringify(['a"b', 'c\\d', 'NULL', 'e,f'])]);
    expect(many.postgres.sql).toBe(few.postgres.sql);
    expect(many.sqlite.sql).toBe(few.sqlite.sql);
    expect(textArray([])).toBe('{}');
  });

  it('refuses a text no database stores (a lone surrogate, a NUL) instead of binding it', () => {
    expect(() => textIn('sqlite', sql`v`, ['ok', '\ud800'])).toThrow(/is not a storable text/);
    expect(() => textArray(['a\u0000b'])).toThrow(/is not a storable text/);
  });
});
