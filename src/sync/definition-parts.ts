import type { OperationDefinitionNode } from 'graphql';
import type { LoadedDocument } from '../api/documents.ts';
import type { SinkName, SinkRecords } from '../store/types.ts';
import { recordLevels, selects } from './definition-selection.ts';
import { describeYaml, isPlainObject, mapAt, stringAt, type YamlPath, type YamlSource } from './definition-yaml.ts';
import type { FieldSpec, FieldType } from './records.ts';
import type { NestedLists, Paging, VariablesInput } from './stream.ts';

/**
 * The parts of a stream definition (src/sync/definitions.ts): the sinks' columns, paging, the records path, variables
 * and their placeholders, the record mapping, and the check that the document selects what the mapping reads.
 */

/**
 * Our tables' columns, by record field, as a definition may name them (field or column name); `key`: part of the
 * sink's key (the store's sinkKey, which test/definitions/format.test.ts compares; not imported here, so loading the
 * definitions does not load the store and its SQL builder).
 */
export const COLUMNS: { [S in SinkName]: { [K in keyof SinkRecords[S]]-?: { column: string; nullable?: true; key?: true } } } = {
  occupancy: {
    floorSpaceId: { column: 'floor_space_id', key: true },
    observedAt: { column: 'observed_at', key: true },
    occupancyStatus: { column: 'occupancy_status' },
    headcount: { column: 'headcount' },
    eventId: { column: 'event_id', nullable: true },
  },
  buildings: { id: { column: 'id', key: true }, name: { column: 'name' } },
};
/** The record fields of a sink's key, in the sink's order. */
export function keyOf(sink: SinkName): string[] {
  return Object.entries(COLUMNS[sink] as Record<string, { key?: true }>).filter(([, c]) => c.key).map(([field]) => field);
}

/** Sinks whose rows a complete listing may soft-delete. */
export const SOFT_DELETE_SINKS: readonly SinkName[] = ['buildings'];
export const FIELD_TYPES: readonly FieldType[] = ['id', 'text', 'string', 'count', 'timestamp'];
/** A nullable column a definition leaves unmapped reads this (never present): it is stored as null. */
export const UNMAPPED = '(unmapped)';

/** The placeholders a variable may take its value from; an unset optional one leaves the variable out. */
export const PLACEHOLDERS: Record<string, { windowed?: true; value(input: VariablesInput): unknown }> = {
  'window.from': { windowed: true, value: (i) => i.window?.from },
  'window.to': { windowed: true, value: (i) => i.window?.to },
  'settings.buildingsNameLike': { value: (i) => i.settings.buildingsNameLike },
};

export const NAME = { re: /^[_A-Za-z][_0-9A-Za-z]*$/, rule: 'is not a GraphQL name', example: 'occupancy' };
export const FIELD_PATH = { re: /^(\$parent\.)*[_A-Za-z][_0-9A-Za-z]*(\.[_A-Za-z][_0-9A-Za-z]*)*$/, rule: 'is not a field path', example: 'observedAt, building.id or $parent.id' };
export const SELECTOR = { re: /^[_A-Za-z][_0-9A-Za-z]*(\[\])?(\.[_A-Za-z][_0-9A-Za-z]*(\[\])?)*$/, rule: 'is not a records path', example: 'buildings or floorSpaceReadings[].floorSpaces[].readings' };

/** `a.b[].c[].d` as the path to the first list and the steps into each nested one. */
export function selectorOf(text: string): { path: string[]; each: NestedLists } {
  const groups: string[][] = [[]];
  for (const part of text.replace(/\[\]$/, '').split('.')) {
    groups.at(-1)!.push(part.replace(/\[\]$/, ''));
    if (part.endsWith('[]')) groups.push([]);
  }
  return { path: groups[0]!, each: groups.slice(1) };
}

/** The records path and every mapped field must be in the answer the document asks for (definition-selection.ts). */
export function checkSelected(
  src: YamlSource,
  path: YamlPath,
  written: Record<string, unknown>,
  sink: SinkName,
  loaded: { doc: LoadedDocument; operation: OperationDefinitionNode },
  paging: Paging,
  record: Record<string, FieldSpec>,
): void {
  const { doc, operation } = loaded;
  const recordsPath = paging.style === 'relay' ? [...paging.connection, 'nodes'] : paging.path;
  const found = recordLevels(doc.document, operation, recordsPath, paging.each ?? []);
  if ('missing' in found) {
    src.error([...path, 'paging', paging.style === 'relay' ? 'connection' : 'records'], `${doc.file}: the document does not select ${found.missing}, where the records are`, 'select it in the document, or correct the paging');
    return;
  }
  for (const [field, spec] of Object.entries(record)) {
    if (spec.path === UNMAPPED) continue;
    const parts = spec.path.split('.');
    const up = parts.filter((p) => p === '$parent').length;
    const level = found.levels[found.levels.length - 1 - up];
    if (level && selects(doc.document, level, parts.slice(up))) continue;
    const key = Object.keys(written).find((k) => columnField(sink, k) === field) ?? field;
    src.error([...path, 'record', key, 'path'], `${doc.file}: the document does not select ${spec.path} for ${field}`, 'add the field to the document, or map the column to a field it selects');
  }
}

export type Need = (at: YamlPath, variable: string, role: string) => void;

export function pagingAt(src: YamlSource, at: YamlPath, value: unknown, need: Need): { paging: Paging; each: NestedLists } | undefined {
  const style = isPlainObject(value) ? value.style : undefined;
  const keys: Record<string, string[]> = { none: ['style', 'records'], cursor: ['style', 'connection', 'pageSize', 'cursor'], offset: ['style', 'records', 'offset', 'limit'] };
  if (typeof style !== 'string' || !(style in keys)) {
    src.error(isPlainObject(value) ? [...at, 'style'] : at, `paging style ${JSON.stringify(style ?? null)} is not one of none, cursor, offset`, 'write e.g. paging: { style: cursor, connection: occupancy, pageSize: first, cursor: after }');
    return undefined;
  }
  const p = mapAt(src, at, value, `${style} paging`, keys[style]!, keys[style]!);
  if (!p) return undefined;
  const before = src.errors.length;
  const variable = (key: string, role: string) => {
    const v = stringAt(src, [...at, key], p[key], key, NAME);
    if (v) need([...at, key], v, role);
    return v ?? '';
  };
  let result: { paging: Paging; each: NestedLists } | undefined;
  if (style === 'cursor') {
    const connection = stringAt(src, [...at, 'connection'], p.connection, 'connection', { ...NAME, re: /^[_A-Za-z][_0-9A-Za-z]*(\.[_A-Za-z][_0-9A-Za-z]*)*$/ });
    const pageSizeVar = variable('pageSize', 'the page size variable');
    const cursorVar = variable('cursor', 'the cursor variable');
    if (connection) result = { paging: { style: 'relay', connection: connection.split('.'), pageSizeVar, cursorVar }, each: [] };
  } else {
    const records = stringAt(src, [...at, 'records'], p.records, 'records', SELECTOR);
    const { path, each } = records ? selectorOf(records) : { path: [], each: [] };
    if (style === 'none') result = { paging: { style: 'single', path, ...(each.length && { each }) }, each };
    else {
      const offsetVar = variable('offset', 'the offset variable');
      const limitVar = variable('limit', 'the limit variable');
      result = { paging: { style: 'offset', path, offsetVar, limitVar, ...(each.length && { each }) }, each };
    }
  }
  return src.errors.length > before ? undefined : result;
}

export function variablesAt(src: YamlSource, at: YamlPath, value: unknown, windowed: boolean, need: Need): Map<string, (input: VariablesInput) => unknown> {
  const out = new Map<string, (input: VariablesInput) => unknown>();
  if (!isPlainObject(value)) {
    src.error(at, `variables must be a map, got ${describeYaml(value)}`, "write e.g. variables: { from: '{{window.from}}' }");
    return out;
  }
  for (const [key, v] of Object.entries(value)) {
    if (!NAME.re.test(key)) src.error([...at, key], `variable ${JSON.stringify(key)} is not a GraphQL name`, 'use the name the document declares', { key: true });
    else need([...at, key], key, 'the variable');
    if (typeof v === 'string' && v.includes('{{')) {
      const m = /^\{\{\s*([\w.]+)\s*\}\}$/.exec(v);
      const placeholder = m ? PLACEHOLDERS[m[1]!] : undefined;
      if (!placeholder) {
        src.error([...at, key], `${JSON.stringify(v)} is not a placeholder this release knows`, `use one of ${Object.keys(PLACEHOLDERS).map((p) => `{{${p}}}`).join(', ')}, as the whole value`);
      } else if (placeholder.windowed && !windowed) {
        src.error([...at, key], `${v} is only known to an incremental-window stream`, 'remove it, or make the stream incremental-window');
      } else out.set(key, placeholder.value);
    } else out.set(key, () => v);
  }
  return out;
}

export const isSink = (value: unknown): value is SinkName => typeof value === 'string' && Object.hasOwn(COLUMNS, value);

export function columnField(sink: SinkName, name: string): string | undefined {
  const columns = COLUMNS[sink] as Record<string, { column: string }>;
  if (name in columns) return name;
  return Object.entries(columns).find(([, c]) => c.column === name)?.[0];
}

export function recordAt(src: YamlSource, at: YamlPath, value: unknown, sink: SinkName, depth: number): Record<string, FieldSpec> | undefined {
  if (value === undefined) return undefined;
  const columns = COLUMNS[sink] as Record<string, { column: string; nullable?: true }>;
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
    const m = mapAt(src, [...at, key], spec, `the mapping of ${field}`, ['path', 'type', 'nullable'], ['path', 'type']);
    if (!m) continue;
    const path = stringAt(src, [...at, key, 'path'], m.path, 'path', FIELD_PATH);
    const parents = path?.match(/\$parent\./g)?.length ?? 0;
    if (parents > depth) {
      src.error([...at, key, 'path'], `${path} goes ${parents} list(s) up, the records path nests ${depth}`, 'mark the enclosing lists with [] in paging.records, or drop $parent.');
    }
    const type = m.type as FieldType;
    if (m.type !== undefined && !FIELD_TYPES.includes(type)) src.error([...at, key, 'type'], `unknown type ${JSON.stringify(m.type)}`, `use one of ${FIELD_TYPES.join(', ')}`);
    if (m.nullable !== undefined && typeof m.nullable !== 'boolean') src.error([...at, key, 'nullable'], 'nullable must be true or false', 'write nullable: true');
    if (m.nullable === true && !columns[field]!.nullable) src.error([...at, key, 'nullable'], `column ${field} cannot be null`, 'remove nullable');
    if (path) out[field] = { path, type, ...(m.nullable === true && { nullable: true }) };
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
