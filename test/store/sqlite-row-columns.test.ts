import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { packRows } from '../../src/store/sqlite/row-columns.ts';
import { SqliteWriter } from '../../src/store/sqlite/writer.ts';
import { tempDir } from '../support/tmp.ts';

/**
 * A page's rows cross to the SQLite writer thread as columns (src/store/sqlite/row-columns.ts): what the thread binds
 * is exactly what the main connection would have bound. Real SQLite files, the real writer thread.
 */

// Every kind of value a sink's row holds: whole numbers (epoch ms, keys), fractions, -0, the largest safe integer,
// null, NaN (SQLite stores NULL), text, bytes, and a column that mixes numbers and text.
const WIDTH = 6;
const VALUES: unknown[] = [
  1, 1_767_225_600_000, 0.25, null, 'a', Buffer.from([1, 2, 3]),
  2, -0, Number.MAX_SAFE_INTEGER, 7, 'b', null,
  3, null, Number.NaN, 8, null, new Uint8Array([255]),
  4, 5, -1.5, 9, 12, Buffer.alloc(0),
];

describe('a page of rows moved to the writer thread as columns', () => {
  let writer: SqliteWriter | undefined;
  let dir: ReturnType<typeof tempDir> | undefined;
  afterEach(async () => {
    await writer?.close();
    dir?.remove();
    writer = dir = undefined;
  });

  it('packs the columns that hold only numbers and nulls into numbers, the rest row by row', () => {
    const packed = packRows(WIDTH, VALUES);
    expect(packed.rows).toBe(4);
    // Column 2 holds a NaN (it would read back as null) and column 4 text beside a number: both stay as they are.
    expect(packed.numeric).toEqual([true, true, false, true, false, false]);
    expect([...packed.numbers]).toEqual([1, 1_767_225_600_000, Number.NaN, 2, -0, 7, 3, Number.NaN, 8, 4, 5, 9]);
    expect(Object.is(packed.numbers[4], -0)).toBe(true);
    expect(packed.others).toEqual([0.25, 'a', Buffer.from([1, 2, 3]), Number.MAX_SAFE_INTEGER, 'b', null, Number.NaN, null, new Uint8Array([255]), -1.5, 12, Buffer.alloc(0)]);
    expect(() => packRows(WIDTH, VALUES.slice(1))).toThrow(/23 values are not rows of 6/);
  });

  it('stores through the writer thread exactly what the main connection stores for the same rows', async () => {
    dir = tempDir('row-columns-');
    const rows = (path: string) => {
      const db = new Database(path, { readonly: true });
      try {
        return db.prepare('SELECT p, a, typeof(a) AS ta, b, typeof(b) AS tb, c, typeof(c) AS tc, d, typeof(d) AS td, e, typeof(e) AS te, f, typeof(f) AS tf FROM t ORDER BY rowid').all();
      } finally {
        db.close();
      }
    };
    const paths = ['main.db', 'thread.db'].map((name) => join(dir!.dir, name));
    for (const path of paths) {
      const db = new Database(path);
      db.exec('CREATE TABLE t (p, a, b, c, d, e, f)');
      db.close();
    }
    const insert = 'INSERT INTO t (p, a, b, c, d, e, f) VALUES (?, ?, ?, ?, ?, ?, ?)';
    // The main connection, value by value, as mainRunner binds them (src/store/sqlite/transactions.ts).
    const main = new Database(paths[0]!);
    const statement = main.prepare(insert);
    for (let offset = 0; offset < VALUES.length; offset += WIDTH) statement.run(['lead', ...VALUES.slice(offset, offset + WIDTH)]);
    main.close();
    writer = new SqliteWriter({ path: paths[1]!, pragmas: [] });
    expect(await writer.rows(insert, WIDTH, VALUES, ['lead'])).toBe(4);
    expect(rows(paths[1]!)).toEqual(rows(paths[0]!));
    // better-sqlite3 binds every JS number as a REAL; a column's INTEGER affinity makes it whole again.
    expect(rows(paths[1]!)[1]).toMatchObject({ a: 2, ta: 'real', b: -0, tb: 'real', c: Number.MAX_SAFE_INTEGER, tc: 'real' });
    expect(rows(paths[1]!)[2]).toMatchObject({ b: null, tb: 'null', c: null, tc: 'null', f: Buffer.from([255]), tf: 'blob' });
  });
});
