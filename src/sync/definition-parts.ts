import type { OperationDefinitionNode } from 'graphql';
import type { LoadedDocument } from '../api/documents.ts';
import { SINK_NAMES, sinkColumns, sinkKey } from '../store/columns.ts';
import type { SinkName, StreamSink } from '../store/types.ts';
import { recordLevels, selects } from './definition-selection.ts';
import { describeYaml, isPlainObject, mapAt, stringAt, type YamlPath, type YamlSource } from './definition-yaml.ts';
import type { PagingStyle } from './paging/index.ts';
import { PARTITION_PATH, type FieldSpec, type FieldType } from './records.ts';
import { isTimeFormat, TIME_FORMATS } from './time-formats.ts';

/**
 * The parts of a stream definition (src/sync/definitions.ts): the sinks' columns, paging, the records path, variables
 * and their placeholders, the record mapping, and the check that the document selects what the mapping reads.
 */

/**
 * Our tables' columns, by record field, as a definition may name them (field or column name): taken from the store's
 * one definition of each sink (src/store/columns.ts, derived from the Drizzle schema), so a column added there is
 * mappable here with no second list.
 */
function columnsOf(sink: SinkName): Record<string, { column: string; nullable: boolean; key: boolean; type: string }> {
  return Object.fromEntries(sinkColumns(sink).columns.map((c) => [c.field, { column: c.column, nullable: c.nullable, key: c.key, type: c.type }]));
}

/** The record fields of a sink's key, in the sink's order. */
export function keyOf(sink: SinkName): string[] {
  return [...sinkKey(sink)];
}

/** Whether a complete listing may soft-delete the sink's rows. */
export const softDeletes = (sink: SinkName): boolean => sinkColumns(sink).softDelete;
export { SINK_NAMES };
export const FIELD_TYPES: readonly FieldType[] = ['id', 'text', 'string', 'count', 'timeZone', 'timestamp'];
/** The sinks' integer columns that may hold a negative number; the others are counts (`count`, from 0). */
const SIGNED_COLUMNS: ReadonlySet<string> = new Set(['floors.level']);
const SIGNED_FIELD_TYPES: readonly FieldType[] = ['id', 'text', 'string', 'count', 'integer', 'timeZone', 'timestamp'];
/** A declared table's fields may also be any whole number, any number, or a boolean (docs/tables.md, "Types"). */
export const TABLE_FIELD_TYPES: readonly FieldType[] = [...FIELD_TYPES, 'integer', 'number', 'boolean'];
/** A nullable column a definition leaves unmapped reads this (never present): it is stored as null. */
export const UNMAPPED = '(unmapped)';

export const NAME = { re: /^[_A-Za-z][_0-9A-Za-z]*$/, rule: 'is not a GraphQL name', example: 'occupancy' };
export const FIELD_PATH = {
  re: /^(\$partition|(\$parent\.)*[_A-Za-z][_0-9A-Za-z]*(\.[_A-Za-z][_0-9A-Za-z]*)*)$/,
  rule: 'is not a field path',
  example: 'observedAt, building.id, $parent.id or $partition',
};
/**
 * The records path, the paging information the style reads, and every mapped field must be in the answer the document
 * asks for (definition-selection.ts): a mapping to a field the document does not select would reject every record,
 * and a connection without its pageInfo could never page.
 */
export function checkSelected(
  src: YamlSource,
  path: YamlPath,
  written: Record<string, unknown>,
  sink: StreamSink,
  loaded: { doc: LoadedDocument; operation: OperationDefinitionNode },
  paging: PagingStyle,
  record: Record<string, FieldSpec>,
): void {
  const { doc, operation } = loaded;
  const found = recordLevels(doc.document, operation, paging.records.path, paging.records.each);
  if ('missing' in found) {
    src.error([...path, 'paging', paging.recordsKey], `${doc.file}: the document does not select ${found.missing}, where the records are`, 'select it in the document, or correct the paging');
    return;
  }
  for (const read of paging.reads) {
    if (read.paths.some((p) => selects(doc.document, [operation.selectionSet], p))) continue;
    const shown = read.paths.map((p) => `data.${p.join('.')}`).join(' or ');
    src.error([...path, 'paging'], `${doc.file}: the document does not select ${shown}, which ${paging.style} paging reads to find the next page`, 'select it in the document (without it the stream could never ask for a second page)');
  }
  for (const [field, spec] of Object.entries(record)) {
    // A fan-out stream's parent key is the value its partition sent, not a field of the answer.
    if (spec.path === UNMAPPED || spec.path === PARTITION_PATH) continue;
    const parts = spec.path.split('.');
    const up = parts.filter((p) => p === '$parent').length;
    const level = found.levels[found.levels.length - 1 - up];
    if (level && selects(doc.document, level, parts.slice(up))) continue;
    const key = Object.keys(written).find((k) => columnField(sink, k) === field) ?? field;
    src.error([...path, 'record', key, 'path'], `${doc.file}: the document does not select ${spec.path} for ${field}`, 'add the field to the document, or map the column to a field it selects');
  }
}

export const isSink = (value: unknown): value is SinkName => typeof value === 'string' && (SINK_NAMES as string[]).includes(value);

/** The record field a definition names by its field or column name; a declared table's fields are named as they are. */
export function columnField(sink: StreamSink, name: string): string | undefined {
  if (sink === 'table') return name;
  const columns = columnsOf(sink);
  if (name in columns) return name;
  return Object.entries(columns).find(([, c]) => c.column === name)?.[0];
}

export function recordAt(src: YamlSource, at: YamlPath, value: unknown, sink: SinkName, depth: number): Record<string, FieldSpec> | undefined {
  if (value === undefined) return undefined;
  const columns = columnsOf(sink);
  const names = Object.entries(columns).map(([f, c]) => `${f} (${c.column})`).join(', ');
  if (!isPlainObject(value)) {
    src.error(at, `record must map columns to fields, got ${describeYaml(value)}`, `map each column of ${sink}: ${names}`);
    return undefined;
  }
  const before = src.errors.length;
  const out: Record<string, FieldSpec> = {};
  const seen = new Set<string>();
  for (const [key, spec] of Object.entries(value)) {
    const field = columnField(sink, key);
    if (!field) {
      src.error([...at, key], `sink ${sink} has no column ${JSON.stringify(key)}`, `map only its columns: ${names}`, { key: true });
      continue;
    }
    if (seen.has(field)) {
      src.error([...at, key], `column ${field} is mapped twice`, 'keep one of its field and column names', { key: true });
      continue;
    }
    seen.add(field);
    // A sink's signed integer column (a floor's level, negative below ground) takes an `integer`, within its int4.
    const int4 = SIGNED_COLUMNS.has(`${sink}.${field}`);
    const declared = spec !== null && typeof spec === 'object' ? (spec as { type?: unknown }).type : undefined;
    if (['number', 'boolean'].includes(declared as string) || (declared === 'integer' && !int4)) {
      src.error([...at, key, 'type'], `type ${String(declared)} is for a declared table's fields; sink ${sink}'s column ${field} is not one`, `use one of ${FIELD_TYPES.join(', ')}`);
      continue;
    }
    const mapped = fieldAt(src, [...at, key], spec, field, depth, int4 ? SIGNED_FIELD_TYPES : FIELD_TYPES);
    if (mapped?.nullable && !columns[field]!.nullable) src.error([...at, key, 'nullable'], `column ${field} cannot be null`, 'remove nullable');
    if (mapped?.ifOffered && !columns[field]!.nullable) {
      src.error([...at, key, 'ifOffered'], `column ${field} cannot be null, so it cannot be left out when the API lacks the field`, 'remove ifOffered');
    }
    if (mapped) out[field] = mapped.type === 'integer' ? { ...mapped, int4: true } : mapped;
  }
  // In the sink's column order, so a record's first broken field is named the same way whatever the file's order.
  const ordered: Record<string, FieldSpec> = {};
  for (const [field, column] of Object.entries(columns)) {
    if (out[field]) ordered[field] = out[field];
    else if (seen.has(field)) continue;
    else if (column.nullable) ordered[field] = { path: UNMAPPED, type: 'id', nullable: true };
    else src.error(at, `column ${field} (${column.column}) of sink ${sink} is not mapped`, `add \`${field}: { path: <field in the answer>, type: ... }\``, { key: true });
  }
  return src.errors.length > before ? undefined : ordered;
}

/**
 * One field's mapping, `{ path, type, nullable?, format?, map? }`: where the value is in the answer and what it must
 * be. `depth`: how many lists the records path nests (how far `$parent.` may go up); `types`: the types allowed here.
 */
export function fieldAt(src: YamlSource, at: YamlPath, spec: unknown, field: string, depth: number, types: readonly FieldType[]): FieldSpec | undefined {
  const m = mapAt(src, at, spec, `the mapping of ${field}`, ['path', 'type', 'nullable', 'format', 'map', 'ifOffered'], ['path', 'type']);
  if (!m) return undefined;
  const path = stringAt(src, [...at, 'path'], m.path, 'path', FIELD_PATH);
  const parents = path?.match(/\$parent\./g)?.length ?? 0;
  if (parents > depth) {
    src.error([...at, 'path'], `${path} goes ${parents} list(s) up, the records path nests ${depth}`, 'mark the enclosing lists with [] in paging.records, or drop $parent.');
  }
  const type = m.type as FieldType;
  if (m.type !== undefined && !types.includes(type)) src.error([...at, 'type'], `unknown type ${JSON.stringify(m.type)}`, `use one of ${types.join(', ')}`);
  if (m.nullable !== undefined && typeof m.nullable !== 'boolean') src.error([...at, 'nullable'], 'nullable must be true or false', 'write nullable: true');
  if (m.ifOffered !== undefined && typeof m.ifOffered !== 'boolean') src.error([...at, 'ifOffered'], 'ifOffered must be true or false', 'write ifOffered: true');
  const format = m.format;
  if (format !== undefined) {
    if (type !== 'timestamp') src.error([...at, 'format'], `only a timestamp has a format, ${field} is ${String(m.type)}`, 'remove format');
    else if (!isTimeFormat(format)) src.error([...at, 'format'], `unknown time format ${describeYaml(format)}`, `use one of ${TIME_FORMATS.join(', ')}`);
  }
  const map = m.map === undefined ? undefined : valueMapAt(src, [...at, 'map'], m.map, type);
  if (!path) return undefined;
  return {
    path,
    type,
    ...(m.nullable === true && { nullable: true }),
    ...(isTimeFormat(format) && format !== 'iso' && { format }),
    ...(map && { map }),
    ...(m.ifOffered === true && { ifOffered: true }),
  };
}

/** A value map: the API's spellings (keys) to the stored values; only for the text types. */
function valueMapAt(src: YamlSource, at: YamlPath, value: unknown, type: FieldType): Record<string, string> | undefined {
  if (type !== 'id' && type !== 'text' && type !== 'string' && type !== 'timeZone') {
    src.error(at, `a map translates text values; this field is a ${type}`, 'remove map, or map a text field');
    return undefined;
  }
  if (!isPlainObject(value) || Object.keys(value).length === 0) {
    src.error(at, `map must list the API's spellings and what each is stored as, got ${describeYaml(value)}`, 'write e.g. map: { CURRENTLY_OCCUPIED: CurrentlyOccupied, NOT_OCCUPIED: Unoccupied }');
    return undefined;
  }
  const out: Record<string, string> = {};
  for (const [spelling, stored] of Object.entries(value)) {
    if (typeof stored !== 'string' || (stored.length === 0 && type !== 'string')) {
      src.error([...at, spelling], `${JSON.stringify(spelling)} maps to ${describeYaml(stored)}, not to a stored value`, 'map each spelling to the text to store, e.g. CurrentlyOccupied');
    } else out[spelling] = stored;
  }
  return out;
}
