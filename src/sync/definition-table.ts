import { columnOfField, declaredTableName, RESERVED_TABLE_NAMES, STORE_COLUMNS, TABLE_NAME } from '../store/declared-tables.ts';
import type { DeclaredTable, TableColumnType } from '../store/types.ts';
import { fieldAt, TABLE_FIELD_TYPES, UNMAPPED } from './definition-parts.ts';
import { describeYaml, isPlainObject, stringAt, type YamlPath, type YamlSource } from './definition-yaml.ts';
import type { FieldSpec, FieldType } from './records.ts';

/**
 * A stream's own table (`sink: table`, docs/tables.md), checked in one place: the table's name (`table:`, a safe
 * identifier; stored as `api_<name>`), its key (`key:`, fields of the record that are never null), and its columns,
 * which are the record's fields: each field is a column of its snake-case name and of its type's store type.
 */

/** The store type of each record type: what the column holds (a type change between two of these is refused). */
export const STORE_TYPES: Readonly<Record<FieldType, TableColumnType>> = {
  id: 'text',
  text: 'text',
  string: 'text',
  count: 'integer',
  integer: 'bigint',
  number: 'double',
  boolean: 'boolean',
  timeZone: 'text',
  timestamp: 'timestamp',
};

const FIELD_NAME = { re: /^[a-z][A-Za-z0-9]*(_[a-z0-9]+)*$/, rule: 'is not a field name (a letter, then letters and digits, camelCase or snake_case)', example: 'floorSpaceId' };
/** Postgres truncates longer identifiers (63 bytes); one name must mean one column on both dialects. */
const MAX_COLUMN = 63;

/** The record of a declared table: every field the stream maps, each a column. */
export function tableRecordAt(src: YamlSource, at: YamlPath, value: unknown, depth: number): Record<string, FieldSpec> | undefined {
  if (value === undefined) return undefined;
  if (!isPlainObject(value) || Object.keys(value).length === 0) {
    src.error(at, `record must map the table's fields to the answer, got ${describeYaml(value)}`, 'write e.g. record: { id: { path: id, type: id }, name: { path: name, type: string, nullable: true } }');
    return undefined;
  }
  const before = src.errors.length;
  const out: Record<string, FieldSpec> = {};
  const columns = new Map<string, string>();
  for (const [field, spec] of Object.entries(value)) {
    if (!FIELD_NAME.re.test(field)) {
      src.error([...at, field], `${JSON.stringify(field)} ${FIELD_NAME.rule}`, `name it e.g. ${FIELD_NAME.example}`, { key: true });
      continue;
    }
    const column = columnOfField(field);
    const clash = columns.get(column);
    if (STORE_COLUMNS.includes(column)) {
      src.error([...at, field], `field ${field} would be column ${column}, which every declared table keeps for itself (${STORE_COLUMNS.join(', ')})`, 'name the field otherwise', { key: true });
    } else if (clash) {
      src.error([...at, field], `fields ${clash} and ${field} would both be column ${column}`, 'keep one of the two spellings', { key: true });
    } else if (column.length > MAX_COLUMN) {
      src.error([...at, field], `field ${field} would be column ${column}, longer than ${MAX_COLUMN} characters`, 'name the field shorter', { key: true });
    }
    columns.set(column, field);
    const mapped = fieldAt(src, [...at, field], spec, field, depth, TABLE_FIELD_TYPES);
    if (mapped?.path === UNMAPPED) src.error([...at, field, 'path'], `${UNMAPPED} is not a path`, 'map the field to the answer, or leave it out');
    else if (mapped) out[field] = mapped;
  }
  return src.errors.length > before ? undefined : out;
}

/** The table a stream declares: `table:` and `key:` of the stream, with the record's fields as its columns. */
export function declaredTableAt(src: YamlSource, path: YamlPath, s: Record<string, unknown>, record: Record<string, FieldSpec> | undefined, stream: DeclaredTable['stream']): DeclaredTable | undefined {
  const before = src.errors.length;
  if (s.table === undefined) {
    src.error(path, 'a stream of sink table has no table', 'add `table: <name>` (stored as api_<name>), e.g. table: desks', { key: true });
    return undefined;
  }
  const name = stringAt(src, [...path, 'table'], s.table, 'table', TABLE_NAME);
  if (name && RESERVED_TABLE_NAMES.includes(name)) {
    src.error([...path, 'table'], `table ${name} would be ${declaredTableName(name)}, one of occupancy-sync's own tables`, 'give the table another name');
  }
  let key: string[] | undefined;
  if (s.key === undefined) src.error(path, 'a stream of sink table has no key', 'add `key: [<field>, ...]`: the record fields that, with the customer, identify a row (e.g. key: [id])', { key: true });
  else if (!Array.isArray(s.key) || s.key.length === 0 || s.key.some((k) => typeof k !== 'string')) {
    src.error([...path, 'key'], `key must list record fields, got ${describeYaml(s.key)}`, 'write e.g. key: [id]');
  } else if (record) {
    key = s.key as string[];
    for (const field of key) {
      const spec = record[field];
      if (!spec) src.error([...path, 'key'], `key field ${field} is not a field of the record`, `declare it in record, or key on one of ${Object.keys(record).join(', ')}`);
      else if (spec.nullable) src.error([...path, 'key'], `key field ${field} is declared nullable, and a row's key can never be null`, `remove nullable from ${field}, or key on another field`);
      else if (spec.type === 'number') src.error([...path, 'key'], `key field ${field} is a number, which does not identify a row exactly`, 'key on an id, a string, an integer or a timestamp');
    }
    if (new Set(key).size !== key.length) src.error([...path, 'key'], `key ${JSON.stringify(s.key)} names a field twice`, 'name each key field once');
  }
  if (src.errors.length > before || !name || !key || !record) return undefined;
  return {
    name,
    key,
    columns: Object.entries(record).map(([field, spec]) => ({ field, column: columnOfField(field), type: STORE_TYPES[spec.type] })),
    ...(stream && { stream }),
  };
}

/** Whether another stream declares the stream's table already (an error at `at`): one declaration per table. */
export function tableTaken(src: YamlSource, at: YamlPath, stream: { name: string; table?: DeclaredTable }, streams: ReadonlyArray<{ name: string; table?: DeclaredTable }>): boolean {
  const sharing = stream.table && streams.find((s) => s.table?.name === stream.table!.name);
  if (!sharing) return false;
  src.error(at, `table ${stream.table!.name} is declared by stream ${sharing.name} too: one declaration per table`, `give this stream's table another name (table: ${stream.table!.name}_${stream.name.replaceAll('-', '_')})`);
  return true;
}
