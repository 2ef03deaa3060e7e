import type { GraphQLSchema } from 'graphql';
import type { ApiClient } from '../api/client.ts';
import { checkCredentials, type Credentials, type Finding } from '../api/diagnose.ts';
import { loadDocument, parseDocumentSource, type LoadedDocument } from '../api/documents.ts';
import { offeredOfSchema, validateDocuments } from '../api/document-schema.ts';
import { fetchLiveSchema, INTROSPECTION_FIX, IntrospectionRefusedError } from '../api/schema.ts';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import { AuthError, messageOf } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { probeStream, type ProbeResult } from '../sync/probe.ts';
import { placeholderSettingsOf, type EngineSettings } from '../sync/settings.ts';
import type { AnyStream } from '../sync/stream.ts';
import { webhookDocuments } from '../webhooks/admin.ts';
import { WEBHOOK_OPERATIONS, type WebhookOperation } from '../webhook-operations.ts';
import { BUILTIN_DEFINITIONS_FILE } from '../../jobs/index.ts';
import { fitStream } from './check-fit.ts';
import { CANONICAL_STATUSES, canonicalGuess, isCanonicalStatus } from '../statuses.ts';
import type { FieldSpec } from '../sync/records.ts';
import { DefinitionPlaces, type Place, type StreamPlace } from './check-places.ts';
import { loadStreams } from './streams.ts';
import { packageLabel } from './package-path.ts';
import { adaptToOffer, needsOffer } from './offered-streams.ts';

/**
 * `occupancy-sync check` as a deploy gate: for one customer, whether the definitions in force (the built-in ones with
 * a user's DEFINITIONS_FILE over them) will work against the live API. Authenticates, validates exactly the documents
 * in force against the live schema, compares each stream's declarations with the schema's types (check-fit.ts),
 * probes each stream with one real request read as a run reads it (src/sync/probe.ts), and lists the webhook
 * operations (those declared absent skipped). Every finding is one line: what, where, the fix.
 */

const label = packageLabel;

/** What `check` checks, read once before any customer: the streams and webhook operations in force, with their documents. */
export interface CheckPlan {
  /** The user's definitions file, when there is one. */
  file: string | undefined;
  streams: Array<{ stream: AnyStream; document: LoadedDocument; place: StreamPlace | undefined }>;
  webhooks: Array<{ operation: WebhookOperation; document?: LoadedDocument; replaced: boolean; absent?: { declaredIn: string } }>;
}

/** Loads the definitions in force with their documents (a broken file or document is a ConfigError, as for every command). */
export function prepareCheck(config: Config, options: { cwd?: string } = {}): CheckPlan {
  const setup = loadStreams(config, { parseDocument: parseDocumentSource, ...(options.cwd && { cwd: options.cwd }) });
  const places = new DefinitionPlaces([{ path: BUILTIN_DEFINITIONS_FILE, label: label(BUILTIN_DEFINITIONS_FILE) }, ...(setup.file ? [{ path: setup.file, label: setup.file }] : [])]);
  const relabel = (doc: LoadedDocument): LoadedDocument => (label(doc.file) === doc.file ? doc : { ...doc, file: label(doc.file) });
  const builtin = webhookDocuments();
  return {
    file: setup.file,
    streams: setup.streams.map((stream) => ({ stream, document: relabel(loadDocument(stream.document)), place: places.stream(stream.name) })),
    webhooks: WEBHOOK_OPERATIONS.map((operation) => {
      const spec = setup.webhooks[operation];
      if (spec && 'absent' in spec) {
        const at = places.webhook(operation);
        return { operation, replaced: true, absent: { declaredIn: at ? `${at.file}:${at.line}:${at.column}` : (setup.file ?? 'the definitions file') } };
      }
      return { operation, replaced: spec !== undefined, document: relabel(spec ? loadDocument(spec.document) : builtin[operation]) };
    }),
  };
}

export interface StreamCheck {
  name: string;
  kind: AnyStream['kind'];
  document: string;
  /** Whether the document validates against the live schema (absent: not validated, no schema). */
  valid?: boolean;
  /** The probe's answer; absent when the stream was not probed (`skipped` says why). */
  probe?: ProbeResult;
  skipped?: string;
  /** The stream is declared ifOffered and the API lacks what it asks for: a run skips it (`skipped` says what). */
  notOffered?: boolean;
  /** Fields declared ifOffered that the API lacks: a run leaves them out and stores NULL (one line each). */
  leftOut?: string[];
}

export interface WebhookCheck {
  operation: WebhookOperation;
  status: 'valid' | 'invalid' | 'absent' | 'unchecked';
  document?: string;
  /** `file:line:column` of the `absent` declaration. */
  declaredIn?: string;
}

export interface CustomerCheck {
  customer: string;
  apiKey: string;
  /** No problem found: the definitions in force work for this customer. */
  ok: boolean;
  token?: Credentials;
  schema?: { source: 'introspection' | 'unavailable'; documents: number; valid: number };
  streams: StreamCheck[];
  webhooks: WebhookCheck[];
  problems: Finding[];
  warnings: Finding[];
  /** Set when the check stopped before the schema (no token); `auth` maps to exit code 77. */
  error?: { kind: 'auth' | 'failure'; message: string };
}

export interface CheckCustomerOptions {
  client: ApiClient;
  customerId: string;
  apiKey: string;
  settings: EngineSettings;
  clock: Clock;
  logger: Logger;
  signal: AbortSignal;
}

const at = (place: Place | undefined) => place ?? {};

export async function checkCustomer(plan: CheckPlan, options: CheckCustomerOptions): Promise<CustomerCheck> {
  const { client, signal } = options;
  const result: CustomerCheck = { customer: options.customerId, apiKey: options.apiKey, ok: false, streams: [], webhooks: [], problems: [], warnings: [] };
  const credentials = await checkCredentials({ client, customerId: options.customerId, clock: options.clock, signal });
  if (credentials.token) result.token = credentials.token;
  result.problems.push(...credentials.problems);
  if (credentials.error) {
    result.error = credentials.error;
    return result;
  }

  const live = await readSchema(options, result);
  if (live.stopped) return result;
  const { schema } = live;
  const validation = new DocumentValidation(schema, result);
  await checkStreams(plan, schema, validation, options, result);
  checkWebhooks(plan, schema, validation, result);
  result.schema = schema ? { source: 'introspection', documents: validation.validated, valid: validation.valid } : { source: 'unavailable', documents: 0, valid: 0 };
  result.ok = result.problems.length === 0;
  return result;
}

/**
 * The live schema, or undefined when the API refuses introspection (a warning: the probes still run); `stopped` when
 * it could not be read otherwise (a problem and `result.error`: the check ends there).
 */
async function readSchema(options: CheckCustomerOptions, result: CustomerCheck): Promise<{ schema?: GraphQLSchema; stopped: boolean }> {
  const { client, signal } = options;
  try {
    return { schema: (await fetchLiveSchema(client, signal)).schema, stopped: false };
  } catch (error) {
    signal.throwIfAborted();
    if (!(error instanceof IntrospectionRefusedError)) {
      const message = messageOf(error);
      result.problems.push({ kind: 'schema', message: `the live schema could not be read: ${message}` });
      result.error = { kind: error instanceof AuthError ? 'auth' : 'failure', message };
      return { stopped: true };
    }
    const message = error.message.replace(/\. Fix: .*$/s, '');
    result.warnings.push({ kind: 'schema', message: `${message}: the documents, record types and webhook operations were not compared with the schema; the probes below still read real answers`, fix: INTROSPECTION_FIX });
    options.logger.warn({ customer: options.customerId }, message);
    return { stopped: false };
  }
}

/** Validates documents against the live schema (each mismatch a problem), counting them; without a schema every document passes. */
class DocumentValidation {
  validated = 0;
  valid = 0;
  private readonly schema: GraphQLSchema | undefined;
  private readonly result: CustomerCheck;
  constructor(schema: GraphQLSchema | undefined, result: CustomerCheck) {
    this.schema = schema;
    this.result = result;
  }

  validate(doc: LoadedDocument, finding: Omit<Finding, 'file' | 'line' | 'column' | 'message' | 'kind'> & { kind: Finding['kind'] }, fix: string): boolean {
    if (!this.schema) return true;
    this.validated += 1;
    const mismatches = validateDocuments(this.schema, [doc]);
    for (const m of mismatches) this.result.problems.push({ ...finding, file: m.file, line: m.line, column: m.column, message: m.message, fix });
    if (mismatches.length === 0) this.valid += 1;
    return mismatches.length === 0;
  }
}

/** Each stream in force: its document validated, its declarations fitted to the schema, then probed with one real request. */
async function checkStreams(plan: CheckPlan, schema: GraphQLSchema | undefined, validation: DocumentValidation, options: CheckCustomerOptions, result: CustomerCheck): Promise<void> {
  const settings = placeholderSettingsOf(options.settings);
  // A fan-out stream is probed with a parent its parent stream's probe read (the parent runs, and is probed, first).
  const firsts = new Map<string, Record<string, unknown>>();
  for (const planned of plan.streams) {
    const check: StreamCheck = { name: planned.stream.name, kind: planned.stream.kind, document: planned.document.file };
    result.streams.push(check);
    const adapted = asOffered(planned, schema, check);
    if (!adapted) continue;
    const { stream, document, place } = adapted;
    const ok = validation.validate(document, { kind: 'document', stream: stream.name }, documentFix(plan, stream, document, place));
    if (schema) {
      check.valid = ok;
      const fit = fitStream(schema, stream, document, place, settings);
      result.problems.push(...fit.problems);
      result.warnings.push(...fit.warnings);
    }
    if (!ok) {
      check.skipped = 'its document does not match the live schema';
      continue;
    }
    const parent = parentToProbe(stream, place, firsts, check, result);
    if (parent === null) continue;
    const { client, signal } = options;
    const probe = await probeStream({ stream, client, document, settings: options.settings, now: () => options.clock.now(), signal, ...(parent !== undefined && { parent }) });
    // The record stays here: check's report names what it read, not the data.
    const { first, ...reported } = probe;
    check.probe = reported;
    if (first) firsts.set(stream.name, first);
    judgeProbe(stream, reported, place, result);
    judgeStatuses(stream, reported, place, result);
  }
}

/**
 * The parent a fan-out stream is probed with (undefined for a stream that does not fan out), read from its parent
 * stream's first record; null when that probe read none (`check.skipped` and a warning say so).
 */
function parentToProbe(stream: AnyStream, place: StreamPlace | undefined, firsts: Map<string, Record<string, unknown>>, check: StreamCheck, result: CustomerCheck): string | undefined | null {
  if (!stream.partition) return undefined;
  const value = firsts.get(stream.partition.parent)?.[stream.partition.parentKey];
  if (typeof value === 'string' || typeof value === 'number') return String(value);
  check.skipped = `its parent stream ${stream.partition.parent} read no parent to probe with`;
  result.warnings.push({
    kind: 'probe',
    stream: stream.name,
    ...at(place?.at(['partition', 'parent'])),
    message: `stream ${stream.name} fans out over the records of stream ${stream.partition.parent}, whose probe read none: its own query was compared with the schema only`,
    fix: `run check again once ${stream.partition.parent} lists a record`,
  });
  return null;
}

/** Each webhook operation in force validated against the live schema (those declared absent listed as such). */
function checkWebhooks(plan: CheckPlan, schema: GraphQLSchema | undefined, validation: DocumentValidation, result: CustomerCheck): void {
  for (const op of plan.webhooks) {
    if (op.absent) {
      result.webhooks.push({ operation: op.operation, status: 'absent', declaredIn: op.absent.declaredIn });
      continue;
    }
    const doc = op.document!;
    const entry: WebhookCheck = { operation: op.operation, status: 'unchecked', document: doc.file };
    result.webhooks.push(entry);
    if (!schema) continue;
    const root = op.operation === 'webhooks' ? 'Query' : 'Mutation';
    const fix = op.replaced
      ? `adapt ${doc.file} to the platform's operation (\`occupancy-sync schema ${root}\` lists them), or declare \`${op.operation}: absent\` under webhooks: if the platform has none`
      : `give the platform's operation in a definitions file (webhooks: { ${op.operation}: { document, result, errors } }, docs/api-assumptions.md; \`occupancy-sync schema ${root}\` lists them), or declare \`webhooks: { ${op.operation}: absent }\` if the platform has none`;
    entry.status = validation.validate(doc, { kind: 'webhook', operation: op.operation }, fix) ? 'valid' : 'invalid';
  }
}

/** The fix for a stream's document the live schema refuses: a built-in one is replaced, a user's adapted. */
function documentFix(plan: CheckPlan, stream: AnyStream, document: LoadedDocument, place: StreamPlace | undefined): string {
  return !plan.file || place?.file !== plan.file
    ? `give stream ${stream.name} a document the API answers in a definitions file (DEFINITIONS_FILE, docs/api-assumptions.md; \`occupancy-sync schema Query\` lists the queries)`
    : `adapt ${document.file} to the live schema (\`occupancy-sync schema Query\` lists the queries, \`occupancy-sync schema NAME\` one of them or a type)`;
}

/**
 * The stream as a run adapts it to what the API offers (src/app/offered-streams.ts): undefined when a run skips it
 * (`check.skipped` says why), else without the ifOffered fields the API lacks (`check.leftOut` names them).
 */
function asOffered<P extends { stream: AnyStream; document: LoadedDocument }>(planned: P, schema: GraphQLSchema | undefined, check: StreamCheck): P | undefined {
  if (!schema || !needsOffer([planned.stream])) return planned;
  const adapted = adaptToOffer([planned.stream], offeredOfSchema(schema), () => planned.document, label);
  const skipped = adapted.notes.find((n) => n.kind === 'skipped');
  if (skipped) {
    check.skipped = skipped.detail;
    check.notOffered = true;
    return undefined;
  }
  if (adapted.notes.length > 0) check.leftOut = adapted.notes.map((n) => n.detail);
  const stream = adapted.streams[0]!;
  return { ...planned, stream, document: adapted.documents.get(stream.document) ?? planned.document };
}

/** The probe's findings: a refused request or a broken contract, rejected records, or a window with nothing to judge. */
function judgeProbe(stream: AnyStream, probe: ProbeResult, place: StreamPlace | undefined, result: CustomerCheck): void {
  const read = probe.window ? `the probe of window [${probe.window.from}, ${probe.window.to}${probe.window.endInclusive ? ']' : ')'}` : "the probe of the listing's first page";
  if (probe.failure) {
    // A failure after the first page was read is the run's page size refused (probe.ts).
    const key =
      probe.runPageSize !== undefined
        ? ['paging']
        : probe.failure.reason === 'truncated'
        ? stream.kind === 'incremental' ? ['window', 'step'] : ['paging', 'maxPageSize']
        : probe.failure.kind === 'refused' || probe.failure.reason === 'window' ? ['variables'] : ['name'];
    result.problems.push({ kind: 'probe', stream: stream.name, ...at(place?.at(key)), message: `${read}: ${probe.failure.message}`, ...(probe.failure.fix && { fix: probe.failure.fix }) });
    return;
  }
  if (probe.rejected > 0) {
    const field = probe.fields[0];
    result.problems.push({
      kind: 'probe',
      stream: stream.name,
      ...at(place?.at(field ? ['record', place.recordKey(field), 'type'] : ['record'])),
      message: `${read}: ${probe.rejected} of ${probe.nodes} record(s) break their declaration${probe.fields.length ? ` (field ${probe.fields.join(', ')})` : ''}: ${probe.reasons.join('; ')}`,
      fix: 'correct the record mapping (path, type, format, map) so it reads what the API answers',
    });
    return;
  }
  if (probe.nodes === 0) {
    result.warnings.push({
      kind: 'probe',
      stream: stream.name,
      ...at(place?.at(['name'])),
      message: `${read} answered no records: the record declaration was compared with the schema only`,
      fix: stream.kind === 'incremental' ? 'run check again once the platform has recent data (or give the stream a longer window.step)' : 'run check again once the listing has records',
    });
  }
}

/**
 * The statuses the probe read that are neither canonical nor mapped to a canonical one: stored as spelled, the reports
 * count them neither occupied nor vacant (0 % occupied, every hour unknown). A warning naming the values seen and
 * the map to add, whatever the field's type (an enum without a map is already named from the schema, with all its
 * values: not twice).
 */
function judgeStatuses(stream: AnyStream, probe: ProbeResult, place: StreamPlace | undefined, result: CustomerCheck): void {
  const unmapped = (probe.statuses ?? []).filter((s) => !isCanonicalStatus(s));
  if (unmapped.length === 0) return;
  const field = 'occupancyStatus';
  if (result.warnings.some((w) => w.kind === 'record' && w.stream === stream.name && w.message.startsWith(`${field} is mapped to an enum`))) return;
  const spec = (stream.record as Record<string, FieldSpec>)[field]!;
  // The API's spellings of each stored value: the value itself without a map, the map's keys that give it with one.
  const spellings = unmapped.flatMap((v) => (spec.map ? Object.keys(spec.map).filter((k) => spec.map![k] === v) : [v]));
  const entries = [...Object.entries(spec.map ?? {}).filter(([k]) => !spellings.includes(k)), ...spellings.map((k) => [k, canonicalGuess(k)] as const)];
  const them = unmapped.length === 1 ? 'it' : 'them';
  result.warnings.push({
    kind: 'record',
    stream: stream.name,
    ...at(place?.at(['record', place.recordKey(field)], true)),
    message: `the probe read ${field} values ${probe.statuses!.join(', ')}: ${unmapped.join(', ')} ${unmapped.length === 1 ? 'is' : 'are'} neither ${CANONICAL_STATUSES.join(' nor ')}${spec.map ? ' after the map' : ' and not mapped'}; stored as spelled, the reports count ${them} neither occupied nor vacant (0 % occupied)`,
    fix: `${spec.map ? 'correct' : 'add'} the value map of ${field}: map: { ${entries.map(([k, v]) => `${yamlKey(k)}: ${v}`).join(', ')} }`,
  });
}

/** A map key as YAML reads it back as the same string (`'true'`, `'1'` quoted). */
function yamlKey(key: string): string {
  return /^[A-Za-z_][A-Za-z0-9_ -]*$/.test(key) && !/^(true|false|yes|no|on|off|null|~)$/i.test(key) ? key : `'${key.replace(/'/g, "''")}'`;
}
