import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Kind, type OperationDefinitionNode } from 'graphql';
import { parseDocumentSource, type LoadedDocument } from '../api/documents.ts';
import { ConfigError } from '../errors.ts';
import { sinkKey } from '../store/sinks.ts';
import type { SinkName, SinkRecords } from '../store/types.ts';
import { describeYaml, isPlainObject, mapAt, stringAt, YamlSource, type YamlPath } from './definition-yaml.ts';
import type { FieldSpec, FieldType } from './records.ts';
import { defineStream, type AnyStream, type NestedLists, type Paging, type StreamKind, type VariablesInput } from './stream.ts';

/**
 * Stream and webhook definitions in a declarative, versioned YAML format (docs/api-assumptions.md, "Adapting to the
 * real API"). The built-in streams are written in it (jobs/streams.yaml); a user's file beside the installed tool
 * replaces streams by name and webhook documents by operation, with no fork. Everything is checked here before use,
 * each problem one `file:line:column: what is wrong. Fix: ...` line: unknown keys, sinks, columns and types, a cursor
 * field that is not a mapped timestamp, a key that is not the sink's, a document that does not parse or does not
 * declare the variables the stream sends, a format version this release does not read.
 */

/** The format versions this release reads. A file of another version is refused by name, never half-read. */
export const DEFINITION_VERSIONS: readonly number[] = [1];

export const WEBHOOK_OPERATIONS = ['registerWebhook', 'updateWebhook', 'webhooks', 'sendTestEvent'] as const;
export type WebhookOperation = (typeof WEBHOOK_OPERATIONS)[number];
/** What src/webhooks/admin.ts sends to, and reads from the answer under the operation's own name. */
const WEBHOOK_SHAPES: Record<WebhookOperation, { type: 'query' | 'mutation'; variables: string[] }> = {
  registerWebhook: { type: 'mutation', variables: ['input'] },
  updateWebhook: { type: 'mutation', variables: ['id', 'input'] },
  webhooks: { type: 'query', variables: [] },
  sendTestEvent: { type: 'mutation', variables: ['webhookId', 'type'] },
};

export interface Definitions {
  file: string;
  version: number;
  streams: AnyStream[];
  /** Absolute paths of documents replacing the built-in webhook documents, by operation. */
  webhooks: Partial<Record<WebhookOperation, string>>;
}

export interface DefinitionsIo {
  /** The text of a file the definitions name (a GraphQL document); throws with an errno code when it cannot. */
  readText(path: string): string;
  /** How a document's path is shown in messages (the package's own as `jobs/x.graphql`). */
  label?(path: string): string;
}

/** Our tables' columns, by record field, as a definition may name them (field or column name). */
const COLUMNS: { [S in SinkName]: { [K in keyof SinkRecords[S]]-?: { column: string; nullable?: true } } } = {
  occupancy: {
    floorSpaceId: { column: 'floor_space_id' },
    observedAt: { column: 'observed_at' },
    occupancyStatus: { column: 'occupancy_status' },
    headcount: { column: 'headcount' },
    eventId: { column: 'event_id', nullable: true },
  },
  buildings: { id: { column: 'id' }, name: { column: 'name' } },
};
/** Sinks whose rows a complete listing may soft-delete. */
const SOFT_DELETE_SINKS: readonly SinkName[] = ['buildings'];
const FIELD_TYPES: readonly FieldType[] = ['id', 'text', 'string', 'count', 'timestamp'];
const KINDS: readonly StreamKind[] = ['full-refresh', 'incremental-window'];
/** A nullable column a definition leaves unmapped reads this (never present): it is stored as null. */
const UNMAPPED = '(unmapped)';

/** The placeholders a variable may take its value from; an unset optional one leaves the variable out. */
const PLACEHOLDERS: Record<string, { windowed?: true; value(input: VariablesInput): unknown }> = {
  'window.from': { windowed: true, value: (i) => i.window?.from },
  'window.to': { windowed: true, value: (i) => i.window?.to },
  'settings.buildingsNameLike': { value: (i) => i.settings.buildingsNameLike },
};

const NAME = { re: /^[_A-Za-z][_0-9A-Za-z]*$/, rule: 'is not a GraphQL name', example: 'occupancy' };
const STREAM_NAME = { re: /^[a-z][a-z0-9-]{0,62}$/, rule: 'must be lower case letters, digits and dashes', example: 'floor-space-readings' };
const FIELD_PATH = { re: /^(\$parent\.)*[_A-Za-z][_0-9A-Za-z]*(\.[_A-Za-z][_0-9A-Za-z]*)*$/, rule: 'is not a field path', example: 'observedAt, building.id or $parent.id' };
const SELECTOR = { re: /^[_A-Za-z][_0-9A-Za-z]*(\[\])?(\.[_A-Za-z][_0-9A-Za-z]*(\[\])?)*$/, rule: 'is not a records path', example: 'buildings or floorSpaceReadings[].floorSpaces[].readings' };

/**
 * Parses and validates a definitions file's text; documents it names are read through `io`, relative to the file.
 * Throws one ConfigError listing every problem, one line each.
 */
export function parseDefinitions(text: string, file: string, io: DefinitionsIo): Definitions {
  const src = new YamlSource(io.label?.(file) ?? file, text);
  const fail = () => new ConfigError(src.errors.join('\n'));
  if (src.errors.length) throw fail();
  const top = mapAt(src, [], src.value ?? null, 'the definitions file', ['version', 'streams', 'webhooks'], []);
  if (!top) throw fail();
  const version = top.version;
  if (version === undefined || !DEFINITION_VERSIONS.includes(version as number)) {
    const found = version === undefined ? 'has no version' : `is version ${JSON.stringify(version)}`;
    src.error(
      version === undefined ? [] : ['version'],
      `the definitions file ${found}, and this release of occupancy-sync reads version ${DEFINITION_VERSIONS.join(', ')}`,
      version === undefined
        ? `add \`version: ${DEFINITION_VERSIONS.at(-1)}\` at the top`
        : 'rewrite it for this release (docs/api-assumptions.md lists each version\'s changes), or install the release that reads it',
    );
    throw fail();
  }
  const base = dirname(file);
  const documents = new DocumentReader(src, base, io);
  const streams: AnyStream[] = [];
  if (top.streams !== undefined) {
    if (!Array.isArray(top.streams)) src.error(['streams'], `streams must be a list, got ${describeYaml(top.streams)}`, 'write each stream as a list item (- name: ...)');
    else {
      top.streams.forEach((entry, i) => {
        const stream = streamAt(src, ['streams', i], entry, documents);
        if (!stream) return;
        if (streams.some((s) => s.name === stream.name)) {
          src.error(['streams', i, 'name'], `stream ${stream.name} is defined twice`, 'keep one definition per name');
        } else streams.push(stream);
      });
    }
  }
  const webhooks: Definitions['webhooks'] = {};
  if (top.webhooks !== undefined) {
    const map = mapAt(src, ['webhooks'], top.webhooks, 'webhooks', WEBHOOK_OPERATIONS);
    for (const [operation, value] of Object.entries(map ?? {})) {
      if (!(WEBHOOK_OPERATIONS as readonly string[]).includes(operation)) continue;
      const path = ['webhooks', operation];
      const loaded = documents.read(path, value);
      if (loaded && checkWebhookDocument(src, path, operation as WebhookOperation, loaded)) {
        webhooks[operation as WebhookOperation] = loaded.path;
      }
    }
  }
  if (src.errors.length) throw fail();
  return { file, version: version as number, streams, webhooks };
}

/** Reads and validates a definitions file (see parseDefinitions); a file that cannot be read is a ConfigError. */
export function loadDefinitionsFile(path: string, options: { label?(path: string): string } = {}): Definitions {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new ConfigError(`${path}: cannot read the definitions file (${code}). Fix: check the path and its permissions`, { cause: error });
  }
  return parseDefinitions(text, path, { readText: (p) => readFileSync(p, 'utf8'), ...(options.label && { label: options.label }) });
}

class DocumentReader {
  constructor(
    readonly src: YamlSource,
    readonly base: string,
    readonly io: DefinitionsIo,
  ) {}

  read(path: YamlPath, value: unknown): { path: string; doc: LoadedDocument; operation: OperationDefinitionNode } | undefined {
    const name = stringAt(this.src, path, value, 'document');
    if (!name) return undefined;
    const abs = resolve(this.base, name);
    let text: string;
    try {
      text = this.io.readText(abs);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
      this.src.error(path, `cannot read the document ${abs} (${code})`, 'give its path relative to the definitions file');
      return undefined;
    }
    try {
      const doc = parseDocumentSource(text, this.io.label?.(abs) ?? abs);
      const operation = doc.document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!;
      return { path: abs, doc, operation };
    } catch (error) {
      // The document's own file:line:column (parseDocumentSource), as one more line.
      if (error instanceof ConfigError) this.src.errors.push(error.message);
      else throw error;
      return undefined;
    }
  }
}

function declared(operation: OperationDefinitionNode): Map<string, { required: boolean }> {
  return new Map(
    (operation.variableDefinitions ?? []).map((v) => [v.variable.name.value, { required: v.type.kind === Kind.NON_NULL_TYPE && !v.defaultValue }]),
  );
}

function checkWebhookDocument(src: YamlSource, path: YamlPath, operation: WebhookOperation, loaded: { doc: LoadedDocument; operation: OperationDefinitionNode }): boolean {
  const shape = WEBHOOK_SHAPES[operation];
  const before = src.errors.length;
  const where = loaded.doc.file;
  if (loaded.doc.operationType !== shape.type) {
    src.error(path, `${where}: ${operation} must be a ${shape.type}, the document holds a ${loaded.doc.operationType}`, `write a ${shape.type}`);
  }
  const fields = loaded.operation.selectionSet.selections.map((s) => (s.kind === Kind.FIELD ? (s.alias ?? s.name).value : ''));
  if (!fields.includes(operation)) {
    src.error(path, `${where}: the answer has no field ${operation}, which occupancy-sync reads`, `alias the platform's field, e.g. \`${operation}: createWebhook(...)\``);
  }
  const vars = declared(loaded.operation);
  for (const v of shape.variables.filter((v) => !vars.has(v))) {
    src.error(path, `${where}: the operation declares no $${v}, which occupancy-sync sends`, `declare $${v} and pass it to the platform's argument`);
  }
  return src.errors.length === before;
}

/** `a.b[].c[].d` as the path to the first list and the steps into each nested one. */
function selectorOf(text: string): { path: string[]; each: NestedLists } {
  const groups: string[][] = [[]];
  for (const part of text.replace(/\[\]$/, '').split('.')) {
    groups.at(-1)!.push(part.replace(/\[\]$/, ''));
    if (part.endsWith('[]')) groups.push([]);
  }
  return { path: groups[0]!, each: groups.slice(1) };
}

function streamAt(src: YamlSource, path: YamlPath, entry: unknown, documents: DocumentReader): AnyStream | undefined {
  const before = src.errors.length;
  const keys = ['name', 'document', 'sink', 'kind', 'paging', 'variables', 'record', 'key', 'cursorField', 'softDelete'];
  const s = mapAt(src, path, entry, 'a stream', keys, ['name', 'document', 'sink', 'kind', 'paging', 'record']);
  if (!s) return undefined;
  const name = stringAt(src, [...path, 'name'], s.name, 'name', STREAM_NAME);
  const sink = s.sink as SinkName;
  if (s.sink !== undefined && !isSink(s.sink)) {
    src.error([...path, 'sink'], `unknown sink ${JSON.stringify(s.sink)}`, `use one of ${Object.keys(COLUMNS).join(', ')}`);
  }
  const kind = s.kind as StreamKind;
  if (s.kind !== undefined && !KINDS.includes(kind)) src.error([...path, 'kind'], `unknown kind ${JSON.stringify(s.kind)}`, `use one of ${KINDS.join(', ')}`);
  const windowed = kind === 'incremental-window';
  const loaded = s.document !== undefined ? documents.read([...path, 'document'], s.document) : undefined;
  if (loaded && loaded.doc.operationType !== 'query') {
    src.error([...path, 'document'], `${loaded.doc.file}: a stream reads with a query, the document holds a ${loaded.doc.operationType}`, 'write a query');
  }
  const vars = loaded ? declared(loaded.operation) : undefined;
  const sent = new Set<string>();
  const needVariable = (at: YamlPath, variable: string, role: string) => {
    sent.add(variable);
    if (vars && !vars.has(variable)) {
      src.error(at, `${role} $${variable} is not declared by the document's operation ${loaded!.doc.operationName ?? ''} (${loaded!.doc.file})`, `declare it in the document, or name the variable the operation has`);
    }
  };

  const paging = s.paging === undefined ? undefined : pagingAt(src, [...path, 'paging'], s.paging, needVariable);
  const variables = s.variables === undefined ? new Map<string, (input: VariablesInput) => unknown>() : variablesAt(src, [...path, 'variables'], s.variables, windowed, needVariable);
  if (vars) {
    for (const [variable, { required }] of vars) {
      if (required && !sent.has(variable)) {
        src.error([...path, 'variables'], `the document's operation requires $${variable} and the stream does not send it`, `add \`${variable}:\` under variables (or paging)`, { key: true });
      }
    }
  }
  const record = isSink(sink) ? recordAt(src, [...path, 'record'], s.record, sink, paging?.each.length ?? 0) : undefined;
  if (s.key !== undefined && isSink(sink)) {
    const expected = sinkKey(sink) as readonly string[];
    const given = Array.isArray(s.key) ? s.key.map((k) => columnField(sink, String(k)) ?? String(k)) : [];
    if (given.length !== expected.length || !expected.every((k) => given.includes(k))) {
      src.error([...path, 'key'], `the key of sink ${sink} is [${expected.join(', ')}], not ${JSON.stringify(s.key)}`, `write key: [${expected.join(', ')}] or leave key out`);
    }
  }
  let cursorField: string | undefined;
  if (s.cursorField !== undefined) {
    const field = typeof s.cursorField === 'string' && isSink(sink) ? columnField(sink, s.cursorField) : undefined;
    if (!windowed) src.error([...path, 'cursorField'], 'only an incremental-window stream has a cursorField', 'remove it');
    else if (!record) {
      // The record's own errors are reported; a cursor field cannot be judged against a broken mapping.
    } else if (!field || !record?.[field] || record[field].path === UNMAPPED) {
      src.error([...path, 'cursorField'], `cursorField ${JSON.stringify(s.cursorField)} is not a mapped column of the record`, 'name the timestamp column the windows are cut on, e.g. observedAt');
    } else if (record[field].type !== 'timestamp') {
      src.error([...path, 'cursorField'], `cursorField ${field} is mapped as ${record[field].type}, not a timestamp`, 'map it with type: timestamp');
    } else cursorField = field;
  } else if (windowed) src.error(path, 'an incremental-window stream has no cursorField', 'add cursorField: the timestamp column the windows are cut on, e.g. observedAt');
  let softDelete: { isComplete(variables: Record<string, unknown>): boolean } | undefined;
  if (s.softDelete !== undefined) {
    const at = [...path, 'softDelete'];
    const rule = mapAt(src, at, s.softDelete, 'softDelete', ['completeWhenUnset'], ['completeWhenUnset']);
    const unset = rule?.completeWhenUnset;
    if (kind !== 'full-refresh') src.error(at, 'only a full-refresh stream can soft-delete', 'remove softDelete');
    else if (!SOFT_DELETE_SINKS.includes(sink)) src.error(at, `rows of sink ${sink} are never soft-deleted`, 'remove softDelete');
    if (rule && (!Array.isArray(unset) || unset.some((v) => typeof v !== 'string' || !variables.has(v)))) {
      src.error([...at, 'completeWhenUnset'], 'completeWhenUnset must list variables of the stream (a listing is complete when none of them is sent)', 'e.g. completeWhenUnset: [nameLike], or [] when every listing is complete');
    } else if (Array.isArray(unset)) {
      const names = unset as string[];
      softDelete = { isComplete: (v) => names.every((n) => v[n] === undefined || v[n] === null) };
    }
  }
  if (src.errors.length > before || !name || !loaded || !paging || !record) return undefined;
  return defineStream({
    name,
    document: loaded.path,
    sink,
    kind,
    paging: paging.paging,
    variables: (input: VariablesInput) => {
      const out: Record<string, unknown> = {};
      for (const [key, make] of variables) {
        const value = make(input);
        if (value !== undefined) out[key] = value;
      }
      return out;
    },
    record: record as never,
    ...(cursorField !== undefined && { cursorField: cursorField as never }),
    ...(softDelete && { softDelete }),
  } as never) as AnyStream;
}

type Need = (at: YamlPath, variable: string, role: string) => void;

function pagingAt(src: YamlSource, at: YamlPath, value: unknown, need: Need): { paging: Paging; each: NestedLists } | undefined {
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

function variablesAt(src: YamlSource, at: YamlPath, value: unknown, windowed: boolean, need: Need): Map<string, (input: VariablesInput) => unknown> {
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

const isSink = (value: unknown): value is SinkName => typeof value === 'string' && Object.hasOwn(COLUMNS, value);

function columnField(sink: SinkName, name: string): string | undefined {
  const columns = COLUMNS[sink] as Record<string, { column: string }>;
  if (name in columns) return name;
  return Object.entries(columns).find(([, c]) => c.column === name)?.[0];
}

function recordAt(src: YamlSource, at: YamlPath, value: unknown, sink: SinkName, depth: number): Record<string, FieldSpec> | undefined {
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
