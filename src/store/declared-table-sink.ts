import type { CompatibilityFlags } from './compatibility.ts';
import { invalid, isInt4 } from './checks.ts';
import { declaredTableName } from './declared-tables.ts';
import { quoted } from './identifiers.ts';
import type { Column, ColumnType, SinkDef } from './sink-def.ts';
import { canonicalTimestamp } from './timestamps.ts';
import type { DeclaredTable, TableColumnType, TableRecord } from './types.ts';

/**
 * The sink of a declared table (docs/tables.md): upserts by the customer and the declared key through the rooms' one
 * prepared statement per sink, as buildings do. A listed row is (again) alive: every declared column takes what the
 * listing says, a retired column (the declaration no longer names it) becomes NULL, last_seen_at moves on and
 * deleted_at is cleared; first_seen_at stays the first listing's.
 */

const BOUND: Record<TableColumnType, ColumnType> = { text: 'text', integer: 'int4', bigint: 'int8', double: 'float8', boolean: 'bool', timestamp: 'timestamptz' };

/** What each store type accepts (the record's declaration checked it already: this is the store's own guard). */
const ACCEPTS: Record<TableColumnType, { test(value: unknown): boolean; what: string }> = {
  text: { test: (v) => typeof v === 'string', what: 'a string' },
  integer: { test: isInt4, what: 'an integer that fits in 32 bits' },
  bigint: { test: (v) => Number.isSafeInteger(v), what: 'a whole number within ±9,007,199,254,740,991' },
  double: { test: (v) => typeof v === 'number' && Number.isFinite(v), what: 'a finite number' },
  boolean: { test: (v) => typeof v === 'boolean', what: 'true or false' },
  timestamp: { test: () => true, what: 'a timestamp' },
};

export function declaredTableSink(table: DeclaredTable, retired: readonly string[], flags: Pick<CompatibilityFlags, 'boundBooleans'>): SinkDef<TableRecord> {
  const sqlName = declaredTableName(table.name);
  const fields = table.columns.map((c) => c.field);
  const key = [...table.key];
  const keyColumns = new Set(key.map((k) => table.columns.find((c) => c.field === k)!.column));
  const set = [
    ...table.columns.filter((c) => !keyColumns.has(c.column)).map((c) => `${quoted(c.column)} = excluded.${quoted(c.column)}`),
    ...retired.map((column) => `${quoted(column)} = NULL`),
    'last_seen_at = excluded.last_seen_at',
    'deleted_at = NULL',
  ];
  const checks = table.columns.map((c) => ({ ...c, accepts: ACCEPTS[c.type], key: keyColumns.has(c.column) }));
  const [no, yes] = flags.boundBooleans;
  return {
    table: sqlName,
    writeTable: quoted(sqlName),
    pageColumns: [
      { name: 'customer_id', type: 'text' },
      { name: 'first_seen_at', type: 'timestamptz' },
      { name: 'last_seen_at', type: 'timestamptz' },
    ],
    pageValues: (page) => [page.customerId, page.at, page.at],
    rowColumns: table.columns.map((c): Column => ({ name: quoted(c.column), type: BOUND[c.type] })),
    computed: [],
    rowFields: fields,
    key,
    rowKey: key.map((k) => fields.indexOf(k)),
    fill(record, out, offset, index) {
      for (let c = 0; c < checks.length; c++) {
        const { field, type, accepts, key: isKey } = checks[c]!;
        const value = record[field];
        if (value === null || value === undefined) {
          if (isKey) throw invalid(sqlName, index, field, `${accepts.what} (it is part of the key)`, value ?? null);
          out[offset + c] = null;
        } else if (type === 'timestamp') {
          out[offset + c] = canonicalTimestamp(value, `${sqlName} record ${index}: ${field}`);
        } else if (!accepts.test(value)) {
          throw invalid(sqlName, index, field, accepts.what, value);
        } else {
          out[offset + c] = type === 'boolean' ? (value ? yes : no) : value;
        }
      }
    },
    onConflict: `ON CONFLICT (customer_id, ${[...keyColumns].map(quoted).join(', ')}) DO UPDATE SET ${set.join(', ')}`,
    softDelete: true,
  };
}
