import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { OperationDefinitionNode } from 'graphql';
import type { LoadedDocument } from '../api/documents.ts';
import { ConfigError } from '../errors.ts';
import { TABLE_SINK, type SinkName, type StreamSink } from '../store/types.ts';
import { parseDuration, PLACEHOLDER_SETTING_NAMES, SYNC_CEILINGS } from '../config.ts';
import { checkSelected, columnField, isSink, keyOf, recordAt, SINK_NAMES, softDeletes, UNMAPPED } from './definition-parts.ts';
import { describeYaml, isPlainObject, mapAt, stringAt, YamlSource, type YamlPath } from './definition-yaml.ts';
import { pagingAt, type PagingStyle } from './paging/index.ts';
import { samplingAt } from './definition-sampling.ts';
import { declaredTableAt, tableRecordAt, tableTaken } from './definition-table.ts';
import { selects } from './definition-selection.ts';
import { checkPartitionPaths, partitionAt, resolvePartitions, type DeclaredPartition } from './definition-partitions.ts';
import { WEBHOOK_OPERATIONS, WEBHOOK_VARIABLES, type WebhookOperation, type WebhookOperationSpec, type WebhookOperationSpecs } from '../webhook-operations.ts';
import { DEFAULT_WINDOW, defineStream, type AnyStream, type StreamDeliveries, type StreamKind, type WindowSpec } from './stream.ts';
import type { FieldSpec } from './records.ts';
import { FORMAT_UNIT_MS, isTimeFormat, TIME_FORMATS } from './time-formats.ts';
import { boundsGrid, compileVariables, type CompiledVariables } from './variables.ts';

/**
 * Stream and webhook definitions in a declarative, versioned YAML format (docs/api-assumptions.md, "Adapting to the
 * real API"). The built-in streams are written in it (jobs/streams.yaml); a user's file beside the installed tool
 * replaces streams by name and webhook documents by operation, with no fork. Everything is checked here before use,
 * each problem one `file:line:column: what is wrong. Fix: ...` line: unknown keys, sinks, columns and types, a cursor
 * field that is not a mapped timestamp, a key that is not the sink's, a document that does not parse or does not
 * declare the variables the stream sends, a format version this release does not read.
 */

/** The format versions this release reads. A file of another version is refused by name, never half-read. */
export const DEFINITION_VERSIONS: readonly number[] = [1, 2];

export { WEBHOOK_OPERATIONS, type WebhookOperation } from '../webhook-operations.ts';
const WEBHOOK_TYPES: Record<WebhookOperation, 'query' | 'mutation'> = {
  registerWebhook: 'mutation',
  updateWebhook: 'mutation',
  webhooks: 'query',
  sendTestEvent: 'mutation',
};
const RESULT_PATH = { re: /^[_A-Za-z][_0-9A-Za-z]*(\[\])?(\.[_A-Za-z][_0-9A-Za-z]*(\[\])?)*$/, rule: 'is not a path of fields', example: 'webhookSubscriptionCreate.webhookSubscription' };

export interface Definitions {
  file: string;
  version: number;
  streams: AnyStream[];
  /** How the webhook operations differ from the built-in ones, by operation (or that the platform lacks one). */
  webhooks: WebhookOperationSpecs;
}

export interface DefinitionsIo {
  /** The text of a file the definitions name (a GraphQL document); throws with an errno code when it cannot. */
  readText(path: string): string;
  /**
   * Parses a GraphQL document (src/api/documents.ts `parseDocumentSource`, which throws a located ConfigError). Given
   * by the commands that send requests (they load graphql anyway); without it the documents are only read, and their
   * syntax, variables and selections are not checked (`status` and `state` need no document, and start faster).
   */
  parseDocument?(source: string, file: string): LoadedDocument;
  /** How a document's path is shown in messages (the package's own as `jobs/x.graphql`). */
  label?(path: string): string;
}

/** Stream kinds by their name in each version of the format (version 1 said full-refresh and incremental-window). */
const KINDS: Record<number, Record<string, StreamKind>> = {
  1: { 'full-refresh': 'full', 'incremental-window': 'incremental' },
  2: { full: 'full', incremental: 'incremental' },
};
const STREAM_NAME = { re: /^[a-z][a-z0-9-]{0,62}$/, rule: 'must be lower case letters, digits and dashes', example: 'floor-space-readings' };

/**
 * Parses and validates a definitions file's text; documents it names are read through `io`, relative to the file.
 * `under`: the streams the file's are laid over (the built-in ones), which a fan-out stream may take its parents from.
 * Throws one ConfigError listing every problem, one line each.
 */
export function parseDefinitions(text: string, file: string, io: DefinitionsIo, under: ReadonlyArray<AnyStream> = []): Definitions {
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
  let streams: AnyStream[] = [];
  const partitions = new Map<AnyStream, DeclaredPartition>();
  if (top.streams !== undefined) {
    if (!Array.isArray(top.streams)) src.error(['streams'], `streams must be a list, got ${describeYaml(top.streams)}`, 'write each stream as a list item (- name: ...)');
    else {
      top.streams.forEach((entry, i) => {
        const read = streamAt(src, ['streams', i], entry, documents, version as number);
        if (!read) return;
        const { stream, partition } = read;
        if (partition) partitions.set(stream, partition);
        if (streams.some((s) => s.name === stream.name)) {
          src.error(['streams', i, 'name'], `stream ${stream.name} is defined twice`, 'keep one definition per name');
        } else if (!tableTaken(src, ['streams', i, 'table'], stream, streams)) streams.push(stream);
      });
    }
  }
  streams = resolvePartitions(src, streams, partitions, under);
  const webhooks: Definitions['webhooks'] = {};
  if (top.webhooks !== undefined) {
    const map = mapAt(src, ['webhooks'], top.webhooks, 'webhooks', WEBHOOK_OPERATIONS);
    for (const [operation, value] of Object.entries(map ?? {})) {
      if (!(WEBHOOK_OPERATIONS as readonly string[]).includes(operation)) continue;
      const spec = webhookAt(src, ['webhooks', operation], operation as WebhookOperation, value, documents);
      if (spec) webhooks[operation as WebhookOperation] = spec;
    }
  }
  if (src.errors.length) throw fail();
  return { file, version: version as number, streams, webhooks };
}

/** Reads and validates a definitions file (see parseDefinitions); a file that cannot be read is a ConfigError. */
export function loadDefinitionsFile(
  path: string,
  options: Partial<Pick<DefinitionsIo, 'label' | 'parseDocument'>> & { under?: ReadonlyArray<AnyStream> } = {},
): Definitions {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new ConfigError(`${path}: cannot read the definitions file (${code}). Fix: check the path and its permissions`, { cause: error });
  }
  return parseDefinitions(text, path, {
    readText: (p) => readFileSync(p, 'utf8'),
    ...(options.label && { label: options.label }),
    ...(options.parseDocument && { parseDocument: options.parseDocument }),
  }, options.under);
}

type Parsed = { doc: LoadedDocument; operation: OperationDefinitionNode };

class DocumentReader {
  constructor(
    readonly src: YamlSource,
    readonly base: string,
    readonly io: DefinitionsIo,
  ) {}

  /** The document's absolute path, and the parsed document when a parser was given (DefinitionsIo.parseDocument). */
  read(path: YamlPath, value: unknown): { path: string; parsed: Parsed | undefined } | undefined {
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
    if (!this.io.parseDocument) return { path: abs, parsed: undefined };
    try {
      const doc = this.io.parseDocument(text, this.io.label?.(abs) ?? abs);
      const operation = doc.document.definitions.find((d): d is OperationDefinitionNode => d.kind === 'OperationDefinition')!;
      return { path: abs, parsed: { doc, operation } };
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
    (operation.variableDefinitions ?? []).map((v) => [v.variable.name.value, { required: v.type.kind === 'NonNullType' && !v.defaultValue }]),
  );
}

/**
 * One webhook operation: a document (whose answer holds the operation's field, as version 1 has it), a map with the
 * document, where the webhook is in the answer and where refusals are listed, or `absent` (the platform has none).
 */
function webhookAt(src: YamlSource, path: YamlPath, operation: WebhookOperation, value: unknown, documents: DocumentReader): WebhookOperationSpec | undefined {
  if (value === 'absent') return { absent: true };
  const before = src.errors.length;
  let spec: Record<string, unknown> | undefined;
  let at = path;
  if (typeof value === 'string') spec = { document: value };
  else {
    spec = mapAt(src, path, value, operation, ['document', 'result', 'errors'], ['document']);
    at = [...path, 'document'];
  }
  if (!spec) return undefined;
  const result = spec.result === undefined ? operation : stringAt(src, [...path, 'result'], spec.result, 'result', RESULT_PATH);
  const errors = spec.errors === undefined ? undefined : stringAt(src, [...path, 'errors'], spec.errors, 'errors', RESULT_PATH);
  const loaded = documents.read(at, spec.document);
  if (!loaded || !result || src.errors.length > before) return undefined;
  if (loaded.parsed) checkWebhookDocument(src, at, operation, loaded.parsed, [result, ...(errors ? [errors] : [])]);
  return src.errors.length > before ? undefined : { document: loaded.path, result, ...(errors && { errors }) };
}

function checkWebhookDocument(src: YamlSource, path: YamlPath, operation: WebhookOperation, loaded: Parsed, reads: string[]): void {
  const type = WEBHOOK_TYPES[operation];
  const where = loaded.doc.file;
  if (loaded.doc.operationType !== type) {
    src.error(path, `${where}: ${operation} must be a ${type}, the document holds a ${loaded.doc.operationType}`, `write a ${type}`);
  }
  for (const read of reads) {
    const steps = read.split('.').map((s) => s.replace(/\[\]$/, ''));
    if (!selects(loaded.doc.document, [loaded.operation.selectionSet], steps)) {
      const first = steps[0]!;
      const fix = read === operation ? `alias the platform's field, e.g. \`${operation}: createWebhook(...)\`, or give \`result:\` the path to the webhook in the answer` : `select it, or correct the path`;
      src.error(path, `${where}: the answer has no ${read === first ? `field ${first}` : read}, which occupancy-sync reads`, fix);
    }
  }
  const vars = declared(loaded.operation);
  const { any } = WEBHOOK_VARIABLES[operation];
  for (const group of any) {
    if (!group.some((v) => vars.has(v))) {
      src.error(path, `${where}: the operation declares none of ${group.map((v) => `$${v}`).join(', ')}, which occupancy-sync sends`, `declare $${group[0]} (or another of them) and pass it to the platform's argument`);
    }
  }
  const known = new Set([...any.flat(), ...WEBHOOK_VARIABLES[operation].optional]);
  for (const [name, { required }] of vars) {
    if (required && !known.has(name)) {
      src.error(path, `${where}: the operation requires $${name}, which occupancy-sync does not send`, `send only ${[...known].map((v) => `$${v}`).join(', ') || 'no variables'}`);
    }
  }
}

function streamAt(src: YamlSource, path: YamlPath, entry: unknown, documents: DocumentReader, version: number): { stream: AnyStream; partition: DeclaredPartition | undefined } | undefined {
  const before = src.errors.length;
  const keys = ['name', 'document', 'sink', 'table', 'kind', 'paging', 'variables', 'record', 'key', 'cursorField', 'window', 'softDelete', 'deliveries', 'sampling', 'samplingInterval', 'maxHold', 'partition', 'ifOffered'];
  const s = mapAt(src, path, entry, 'a stream', keys, ['name', 'document', 'sink', 'kind', 'paging', 'record']);
  if (!s) return undefined;
  const name = stringAt(src, [...path, 'name'], s.name, 'name', STREAM_NAME);
  const sink = s.sink as SinkName;
  const declaresTable = s.sink === TABLE_SINK;
  if (s.sink !== undefined && !isSink(s.sink) && !declaresTable) {
    src.error([...path, 'sink'], `unknown sink ${JSON.stringify(s.sink)}`, `use one of ${SINK_NAMES.join(', ')}, or ${TABLE_SINK} with the stream's own table (docs/tables.md)`);
  }
  if (!declaresTable && s.table !== undefined) src.error([...path, 'table'], `only a stream of sink ${TABLE_SINK} declares a table; this one's sink is ${String(s.sink)}`, `remove table, or write sink: ${TABLE_SINK}`);
  const kind = kindAt(src, path, s.kind, version);
  const windowed = kind === 'incremental';
  const loaded = s.document !== undefined ? documents.read([...path, 'document'], s.document) : undefined;
  const parsed = loaded?.parsed;
  if (parsed && parsed.doc.operationType !== 'query') {
    src.error([...path, 'document'], `${parsed.doc.file}: a stream reads with a query, the document holds a ${parsed.doc.operationType}`, 'write a query');
  }
  const vars = parsed ? declared(parsed.operation) : undefined;
  const sent = new Set<string>();
  const needVariable = (at: YamlPath, variable: string, role: string) => {
    sent.add(variable);
    if (vars && !vars.has(variable)) {
      src.error(at, `${role} $${variable} is not declared by the document's operation ${parsed!.doc.operationName ?? ''} (${parsed!.doc.file})`, `declare it in the document, or name the variable the operation has`);
    }
  };

  const paging = s.paging === undefined ? undefined : pagingAt(src, [...path, 'paging'], s.paging, needVariable, version);
  let variables: CompiledVariables | undefined = { names: [], bounds: {}, settingsRead: new Map(), build: () => ({}) };
  if (s.variables !== undefined) {
    variables = compileVariables(src, [...path, 'variables'], s.variables, { windowed, settings: PLACEHOLDER_SETTING_NAMES });
    if (isPlainObject(s.variables)) for (const v of Object.keys(s.variables)) needVariable([...path, 'variables', v], v, 'the variable');
  }
  const partition = s.partition === undefined ? undefined : partitionAt(src, [...path, 'partition'], s.partition, { sent: new Set(sent), needVariable });
  if (vars) {
    for (const [variable, { required }] of vars) {
      if (required && !sent.has(variable)) {
        src.error([...path, 'variables'], `the document's operation requires $${variable} and the stream does not send it`, `add \`${variable}:\` under variables (or paging)`, { key: true });
      }
    }
  }
  if (paging) checkSinglePageCap(src, path, paging, windowed);
  const depth = paging?.records.each.length ?? 0;
  const record = declaresTable ? tableRecordAt(src, [...path, 'record'], s.record, depth) : isSink(sink) ? recordAt(src, [...path, 'record'], s.record, sink, depth) : undefined;
  if (record && s.partition === undefined) checkPartitionPaths(src, [...path, 'record'], record, s.record as Record<string, unknown>, sink);
  if (s.key !== undefined && isSink(sink)) checkKey(src, [...path, 'key'], s.key, sink);
  const table = declaresTable ? declaredTableAt(src, path, s, record, name ? { name, incremental: windowed } : undefined) : undefined;
  const cursorField = cursorFieldAt(src, path, s.cursorField, declaresTable ? TABLE_SINK : sink, windowed, record);
  const window = windowed && variables ? windowAt(src, [...path, 'window'], s.window, variables) : undefined;
  if (!windowed && s.window !== undefined) src.error([...path, 'window'], 'only an incremental stream has windows', 'remove window');
  const softDelete = s.softDelete === undefined ? undefined : softDeleteAt(src, [...path, 'softDelete'], s.softDelete, kind, declaresTable ? TABLE_SINK : sink, variables);
  if (declaresTable && s.deliveries !== undefined) src.error([...path, 'deliveries'], `deliveries are stored into sink occupancy, this stream's sink is ${TABLE_SINK}`, 'remove deliveries');
  const deliveries = s.deliveries === undefined || !record || declaresTable ? undefined : deliveriesAt(src, [...path, 'deliveries'], s.deliveries, sink, record);
  const sampling = isSink(sink) || declaresTable ? samplingAt(src, path, s, declaresTable ? TABLE_SINK : sink) : undefined;
  if (parsed && paging && record && src.errors.length === before) checkSelected(src, path, s.record as Record<string, unknown>, declaresTable ? TABLE_SINK : sink, parsed, paging, record);
  if (s.ifOffered !== undefined && typeof s.ifOffered !== 'boolean') src.error([...path, 'ifOffered'], `ifOffered must be true or false, got ${describeYaml(s.ifOffered)}`, 'write ifOffered: true (run the stream only when the API offers its query)');
  if (src.errors.length > before || !name || !loaded || !paging || !record || !kind || !variables || (declaresTable && !table)) return undefined;
  const build = variables.build;
  const stream = defineStream({
    name,
    document: loaded.path,
    sink: declaresTable ? TABLE_SINK : sink,
    ...(table && { table }),
    kind,
    paging,
    variables: build,
    record: record as never,
    ...(cursorField !== undefined && { cursorField: cursorField as never }),
    ...(window && { window }),
    ...(softDelete && { softDelete }),
    ...(deliveries && { deliveries }),
    ...(sampling && sampling),
    ...(s.ifOffered === true && { ifOffered: true }),
  } as never) as AnyStream;
  return { stream, partition };
}

/** The stream's kind as this version of the format spells it (a word of another version is named as such). */
function kindAt(src: YamlSource, path: YamlPath, given: unknown, version: number): StreamKind | undefined {
  const kinds = KINDS[version]!;
  const kind = typeof given === 'string' && Object.hasOwn(kinds, given) ? kinds[given] : undefined;
  if (given !== undefined && !kind) {
    const other = Object.entries(KINDS).find(([v, k]) => Number(v) !== version && typeof given === 'string' && Object.hasOwn(k, given));
    src.error([...path, 'kind'], `unknown kind ${JSON.stringify(given)}${other ? ` (a version ${other[0]} word)` : ''}`, `use one of ${Object.keys(kinds).join(', ')}`);
  }
  return kind;
}

/** Full listings too: a listing cut at an unknown cap would be committed as complete and soft-delete the rest. */
function checkSinglePageCap(src: YamlSource, path: YamlPath, paging: PagingStyle, windowed: boolean): void {
  if (!paging.canAskForMore && paging.maxPageSize === undefined) {
    src.error(
      [...path, 'paging'],
      `a stream read in single pages must declare maxPageSize, the most records one answer holds: an answer cut at an unknown cap would be committed as ${windowed ? 'a complete window' : 'a complete listing (and the rows it lacks soft-deleted)'}`,
      "add maxPageSize (the API's documented limit) to paging, or use the API's paging style",
    );
  }
}

/** A declared key must be the sink's (it is the table's primary key; the declaration only repeats it). */
function checkKey(src: YamlSource, at: YamlPath, declared: unknown, sink: SinkName): void {
  const expected = keyOf(sink);
  const given = Array.isArray(declared) ? declared.map((k) => columnField(sink, String(k)) ?? String(k)) : [];
  if (given.length !== expected.length || !expected.every((k) => given.includes(k))) {
    src.error(at, `the key of sink ${sink} is [${expected.join(', ')}], not ${JSON.stringify(declared)}`, `write key: [${expected.join(', ')}] or leave key out`);
  }
}

/** The timestamp column an incremental stream's windows are cut on: a mapped timestamp of its record. */
function cursorFieldAt(src: YamlSource, path: YamlPath, given: unknown, sink: StreamSink, windowed: boolean, record: Record<string, FieldSpec> | undefined): string | undefined {
  let cursorField: string | undefined;
  if (given !== undefined) {
    const field = typeof given === 'string' && (isSink(sink) || sink === TABLE_SINK) ? columnField(sink, given) : undefined;
    if (!windowed) src.error([...path, 'cursorField'], 'only an incremental stream has a cursorField', 'remove it');
    else if (!record) {
      // The record's own errors are reported; a cursor field cannot be judged against a broken mapping.
    } else if (!field || !record?.[field] || record[field].path === UNMAPPED) {
      src.error([...path, 'cursorField'], `cursorField ${JSON.stringify(given)} is not a mapped column of the record`, 'name the timestamp column the windows are cut on, e.g. observedAt');
    } else if (record[field].type !== 'timestamp') {
      src.error([...path, 'cursorField'], `cursorField ${field} is mapped as ${record[field].type}, not a timestamp`, 'map it with type: timestamp');
    } else cursorField = field;
  } else if (windowed) src.error(path, 'an incremental stream has no cursorField', 'add cursorField: the timestamp column the windows are cut on, e.g. observedAt');
  return cursorField;
}

/** A full stream's rule for when a listing is complete (only then are the rows it lacks soft-deleted). */
function softDeleteAt(src: YamlSource, at: YamlPath, given: unknown, kind: StreamKind | undefined, sink: StreamSink, variables: CompiledVariables | undefined): { isComplete(variables: Record<string, unknown>): boolean } | undefined {
  const rule = mapAt(src, at, given, 'softDelete', ['completeWhenUnset'], ['completeWhenUnset']);
  const unset = rule?.completeWhenUnset;
  if (kind !== 'full') src.error(at, 'only a full stream can soft-delete', 'remove softDelete');
  else if (sink !== TABLE_SINK && !softDeletes(sink)) src.error(at, `rows of sink ${sink} are never soft-deleted`, 'remove softDelete');
  if (rule && (!Array.isArray(unset) || unset.some((v) => typeof v !== 'string' || !variables?.names.includes(v)))) {
    src.error([...at, 'completeWhenUnset'], 'completeWhenUnset must list variables of the stream (a listing is complete when none of them is sent)', 'e.g. completeWhenUnset: [nameLike], or [] when every listing is complete');
    return undefined;
  }
  if (!Array.isArray(unset)) return undefined;
  const names = unset as string[];
  return { isComplete: (v) => names.every((n) => v[n] === undefined || v[n] === null) };
}

const DELIVERY_PATH = { re: /^(\$delivery\.)?[_A-Za-z][_0-9A-Za-z]*(\.[_A-Za-z][_0-9A-Za-z]*)*$/, rule: 'is not a field path', example: 'FloorSpaceId or $delivery.Created' };

/**
 * Where a webhook delivery's items carry the stream's columns (`deliveries: { type: Occupancy, record: { ... } }`): per
 * column the item's field, or `$delivery.` and a field of the envelope; the type, value map and nullability are the
 * stream's own, so a record is validated by one declaration whichever way it arrived. A timestamp may be written in
 * another format there (`{ path: $delivery.Created, format: iso }`).
 */
function deliveriesAt(src: YamlSource, at: YamlPath, value: unknown, sink: SinkName, record: Record<string, FieldSpec>): StreamDeliveries | undefined {
  const d = mapAt(src, at, value, 'deliveries', ['type', 'record'], ['type', 'record']);
  if (!d) return undefined;
  const before = src.errors.length;
  if (sink !== 'occupancy') src.error(at, `deliveries are stored into sink occupancy, this stream's sink is ${sink}`, 'remove deliveries');
  const type = stringAt(src, [...at, 'type'], d.type, 'type', { re: /^[A-Za-z][A-Za-z0-9_.-]{0,99}$/, rule: 'is not an event type name', example: 'Occupancy' });
  const paths = isPlainObject(d.record) ? d.record : undefined;
  if (!paths) src.error([...at, 'record'], `the deliveries record must map columns to the items' fields, got ${describeYaml(d.record)}`, 'write e.g. record: { floorSpaceId: FloorSpaceId, observedAt: $delivery.Created, ... }');
  if (!paths || src.errors.length > before || !type) return undefined;
  const out: Record<string, FieldSpec> = {};
  for (const [key, spec] of Object.entries(paths)) {
    const field = columnField(sink, key);
    const base = field ? record[field] : undefined;
    if (!field || !base) {
      src.error([...at, 'record', key], `sink ${sink} has no column ${JSON.stringify(key)}`, `map only its columns: ${Object.keys(record).join(', ')}`, { key: true });
      continue;
    }
    const m = typeof spec === 'string' ? { path: spec } : mapAt(src, [...at, 'record', key], spec, `the delivery mapping of ${field}`, ['path', 'format'], ['path']);
    if (!m) continue;
    const path = stringAt(src, typeof spec === 'string' ? [...at, 'record', key] : [...at, 'record', key, 'path'], m.path, 'path', DELIVERY_PATH);
    if (m.format !== undefined && (base.type !== 'timestamp' || !isTimeFormat(m.format))) {
      src.error([...at, 'record', key, 'format'], base.type !== 'timestamp' ? `only a timestamp has a format, ${field} is ${base.type}` : `unknown time format ${describeYaml(m.format)}`, `use one of ${TIME_FORMATS.join(', ')}`);
      continue;
    }
    if (path) {
      const { format: _, ...rest } = base;
      const format = m.format ?? base.format;
      out[field] = { ...rest, path, ...(format && format !== 'iso' && { format: format as FieldSpec['format'] }) };
    }
  }
  for (const [field, base] of Object.entries(record)) {
    if (out[field]) continue;
    if (base.nullable || base.path === UNMAPPED) out[field] = { ...base, path: UNMAPPED, nullable: true };
    else src.error([...at, 'record'], `column ${field} is not given for deliveries`, `add \`${field}: <the item's field, or $delivery.<envelope field>>\``);
  }
  return src.errors.length > before ? undefined : { type, record: out as never };
}

/** An incremental stream's `window`: whether the end bound is inclusive, its own step; aligned to the bounds' formats. */
function windowAt(src: YamlSource, at: YamlPath, value: unknown, variables: CompiledVariables): WindowSpec | undefined {
  const gridMs = boundsGrid(variables.bounds);
  const endSlackMs = FORMAT_UNIT_MS[variables.bounds.to ?? 'iso'];
  if (value === undefined) return { ...DEFAULT_WINDOW, gridMs };
  const w = mapAt(src, at, value, 'window', ['end', 'step']);
  if (!w) return undefined;
  let endInclusive = false;
  if (w.end !== undefined) {
    if (w.end !== 'inclusive' && w.end !== 'exclusive') src.error([...at, 'end'], `end must be exclusive or inclusive, got ${describeYaml(w.end)}`, 'write end: inclusive when the API reads records at the end bound too (from <= t <= to)');
    endInclusive = w.end === 'inclusive';
  }
  let stepMs: number | undefined;
  if (w.step !== undefined) {
    stepMs = typeof w.step === 'string' ? parseDuration(w.step) : undefined;
    if (!stepMs || stepMs < 1) {
      src.error([...at, 'step'], `step ${describeYaml(w.step)} is not a duration`, "write e.g. step: 15m, step: 1h or step: 1d");
      stepMs = undefined;
    } else if (stepMs % gridMs !== 0) {
      src.error([...at, 'step'], `step ${String(w.step)} is not a whole number of the bounds' unit (${gridMs} ms: a bound sent as a date needs whole days)`, 'choose a step that is a multiple of it');
    } else if (stepMs > SYNC_CEILINGS.step.ms) {
      src.error([...at, 'step'], `step ${String(w.step)} is longer than ${SYNC_CEILINGS.step.text} (as SYNC_STEP: ${SYNC_CEILINGS.step.why})`, 'write e.g. step: 1h or step: 1d');
    }
  }
  return { endInclusive, stepMs, gridMs, endSlackMs: endInclusive ? endSlackMs : 0 };
}
