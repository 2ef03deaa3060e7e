import type { LoadedDocument } from '../api/documents.ts';
import { fetchOffered, missingFields, withoutFields, type MissingField, type OfferedSchema } from '../api/offered.ts';
import type { Clock } from '../clock.ts';
import type { Logger } from '../logger.ts';
import { sinkColumns } from '../store/columns.ts';
import { declaredTableName } from '../store/declared-tables.ts';
import type { SinkName } from '../store/types.ts';
import { UNMAPPED } from '../sync/definition-parts.ts';
import type { StreamOffer, SyncTarget } from '../sync/engine.ts';
import type { FieldSpec } from '../sync/records.ts';
import type { AnyStream } from '../sync/stream.ts';

/**
 * The streams as the live API can answer them (`ifOffered`, docs/api-assumptions.md): a stream declared
 * `ifOffered: true` whose document asks for something the API lacks (a `floors` query the platform does not have) is
 * skipped; a record field declared `ifOffered: true` that the API lacks (`Building.timeZone`) is left out of the
 * document and its column stored NULL. Each is said in one line. Streams without such declarations run as declared.
 */

/** What a report loses when a stream of the sink is skipped, for the one line that says so. */
const LOSS: Record<AnyStream['sink'], string> = {
  table: 'its table is not filled',
  buildings: 'the buildings table is not filled',
  floors: 'the floors table is not filled: floor spaces are reported without their floor',
  floorSpaces: 'reports will name floor spaces by id (no names, floors, capacity or space type)',
  occupancy: 'no readings are read by it',
};

export interface OfferNote {
  stream: string;
  /** `skipped`: the stream does not run; `field`: it runs without the field. */
  kind: 'skipped' | 'field';
  /** One line: what the API lacks, where it was asked for, what it means. */
  message: string;
  /** The message without the stream's name in front (`check` prints it on the stream's line). */
  detail: string;
  /** The record field left out (`field` notes). */
  field?: string;
}

export interface OfferedStreams {
  streams: AnyStream[];
  /** Documents that differ from their files (fields the API lacks left out), by the stream's document path. */
  documents: Map<string, LoadedDocument>;
  notes: OfferNote[];
}

/** Whether any stream declares something ifOffered (only then is the API asked what it offers). */
export function needsOffer(streams: ReadonlyArray<AnyStream>): boolean {
  return streams.some((s) => s.ifOffered === true || Object.values(s.record as Record<string, FieldSpec>).some((f) => f.ifOffered === true));
}

const where = (m: MissingField, root: string) => (m.type === root ? `no ${m.field} query (${m.type}.${m.field})` : `no ${m.type}.${m.field}`);

/** The ifOffered field whose path reads the missing field (the response path ends with the field's path). */
function fieldFor(record: Record<string, FieldSpec>, missing: MissingField): string | undefined {
  for (const [field, spec] of Object.entries(record)) {
    if (spec.ifOffered !== true) continue;
    const parts = spec.path.split('.').filter((p) => p !== '$parent');
    if (parts.length <= missing.path.length && parts.every((p, i) => missing.path[missing.path.length - parts.length + i] === p)) return field;
  }
  return undefined;
}

/** The stream's table and its columns by record field, for the line that says a column is stored NULL. */
function whereStored(stream: AnyStream): { table: string; columns: Map<string, string> } {
  if (stream.sink === 'table') return { table: declaredTableName(stream.table!.name), columns: new Map(stream.table!.columns.map((c) => [c.field, c.column])) };
  const shape = sinkColumns(stream.sink as SinkName);
  return { table: shape.relation, columns: new Map<string, string>(shape.columns.map((c) => [c.field as string, c.column])) };
}

/** Pure: the streams in force adapted to what the API offers. `load` reads a stream's document. */
export function adaptToOffer(streams: ReadonlyArray<AnyStream>, offered: OfferedSchema, load: (path: string) => LoadedDocument, label: (path: string) => string = (p) => p): OfferedStreams {
  const out: OfferedStreams = { streams: [], documents: new Map(), notes: [] };
  for (const stream of streams) {
    const record = stream.record as Record<string, FieldSpec>;
    if (!needsOffer([stream])) {
      out.streams.push(stream);
      continue;
    }
    const doc = load(stream.document);
    const missing = missingFields(offered, doc.document);
    const covered = missing.map((m) => ({ m, field: fieldFor(record, m) }));
    const uncovered = covered.filter((c) => c.field === undefined).map((c) => c.m);
    if (uncovered.length > 0) {
      if (stream.ifOffered === true) {
        const lacks = uncovered.map((m) => where(m, offered.query)).join(', ');
        const detail = `the API offers ${lacks}, which ${label(stream.document)} asks for; ${LOSS[stream.sink]}`;
        out.notes.push({ stream: stream.name, kind: 'skipped', detail, message: `stream ${stream.name} skipped: ${detail}` });
      } else {
        // Not declared optional: it runs as declared, and the API's refusal says what is wrong (as `check` does).
        out.streams.push(stream);
      }
      continue;
    }
    if (missing.length === 0) {
      out.streams.push(stream);
      continue;
    }
    const { table, columns } = whereStored(stream);
    const left = { ...record };
    for (const { m, field } of covered) {
      left[field!] = { path: UNMAPPED, type: 'id', nullable: true };
      const detail = `the API offers ${where(m, offered.query)}, which ${label(stream.document)} asks for: ${table}.${columns.get(field!) ?? field} is stored NULL`;
      out.notes.push({ stream: stream.name, kind: 'field', field: field!, detail, message: `stream ${stream.name}: ${detail}` });
    }
    out.documents.set(stream.document, withoutFields(doc, missing));
    out.streams.push({ ...stream, record: left } as AnyStream);
  }
  return out;
}

/**
 * The engine's `offer` (src/sync/engine.ts): asked by the first customer whose credentials the engine verified, the
 * API's offer is read once (once per `ttlMs` in a daemon, whose passes share it) and the streams adapted; every
 * customer of the run gets the same answer. Each note is logged once per offer: a skipped stream as a warning, a field
 * left out as information. An API that refuses introspection runs the streams as declared, with one warning; a request
 * that fails otherwise (the API went away) leaves the streams as declared, and the run meets and reports the failure.
 */
export function createOffer(options: {
  streams: ReadonlyArray<AnyStream>;
  logger: Logger;
  loadDocument(path: string): LoadedDocument;
  label?(path: string): string;
  /** A daemon's: ask again after `ttlMs` (a platform may add its floors query), each line said once per process. */
  clock?: Clock;
  ttlMs?: number;
}): (target: Pick<SyncTarget, 'client'>, signal: AbortSignal | undefined) => Promise<StreamOffer | undefined> {
  if (!needsOffer(options.streams)) return async () => undefined;
  const said = new Set<string>();
  const say = (line: string, level: 'warn' | 'info') => {
    if (said.has(line)) return;
    said.add(line);
    options.logger[level](line);
  };
  let asked: { at: number; answer: Promise<StreamOffer | undefined> } | undefined;
  const ask = async (target: Pick<SyncTarget, 'client'>, signal: AbortSignal | undefined): Promise<StreamOffer | undefined> => {
    let result: Awaited<ReturnType<typeof fetchOffered>>;
    try {
      result = await fetchOffered(target.client as Parameters<typeof fetchOffered>[0], signal);
    } catch {
      asked = undefined;
      return undefined;
    }
    if (!result.ok) {
      const names = options.streams.filter((s) => needsOffer([s])).map((s) => s.name).join(', ');
      say(`${result.reason}: streams ${names} run as declared, whether or not the API offers what they ask for (ifOffered needs the schema). Fix: if a run fails on a query the API lacks, replace that stream in a definitions file (docs/api-assumptions.md)`, 'warn');
      return undefined;
    }
    const adapted = adaptToOffer(options.streams, result.offered, options.loadDocument, options.label);
    for (const note of adapted.notes) say(note.message, note.kind === 'skipped' ? 'warn' : 'info');
    const kept = new Set(adapted.streams.map((s) => s.name));
    return {
      skipped: new Set(options.streams.filter((s) => !kept.has(s.name)).map((s) => s.name)),
      adapted: new Map(adapted.streams.filter((s) => adapted.documents.has(s.document)).map((s) => [s.name, { stream: s, document: adapted.documents.get(s.document)! }])),
    };
  };
  return (target, signal) => {
    const now = options.clock?.now() ?? 0;
    if (!asked || (options.clock && now - asked.at >= (options.ttlMs ?? 15 * 60_000))) asked = { at: now, answer: ask(target, signal) };
    return asked.answer;
  };
}
