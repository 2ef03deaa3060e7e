import postgres, { type Sql } from 'postgres';
import { parsePgTimestamp } from '../timestamps.ts';

/**
 * A postgres.js client. Sessions run with TimeZone=UTC so date_trunc and text output agree with the SQLite side, with
 * the schema of `?schema=` as search_path, and read-only when the store was opened for reading.
 */
export function connect(url: string, schema: string | undefined, max: number, extra: postgres.Options<{}> = {}, readonly = false): Sql {
  const client = postgres(url, {
    max,
    ...extra,
    onnotice: () => {},
    connection: {
      TimeZone: 'UTC',
      application_name: 'occupancy-sync',
      ...(schema ? { search_path: `"${schema}"` } : {}),
      ...(readonly ? { default_transaction_read_only: true } : {}),
    },
  });
  // Plain rows on both dialects: timestamps as canonical ISO strings, counts and averages as numbers (SQLite returns
  // numbers too). int8 values here are counts and ids, far below 2^53.
  const parsers = client.options.parsers as Record<string, (text: string) => unknown>;
  parsers['1184'] = parsePgTimestamp;
  parsers['1114'] = parsePgTimestamp;
  parsers['20'] = Number;
  parsers['1700'] = Number;
  return client;
}
