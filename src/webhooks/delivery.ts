import { canonicalTimestamp } from '../store/timestamps.ts';
import { FIRST_READING } from '../time.ts';
import type { DeliveryRecord, DeliveryRule, OccupancyRecord, QuarantinedRecord } from '../store/types.ts';
import { Refusal } from './refusal.ts';
import { checkStrictJson } from '../strict-json.ts';

/**
 * Parsing of a delivery body (external API, section 2.6): the envelope is checked here (Id, Type, CustomerId,
 * Created, Sent, a Data list; unknown fields allowed, missing or mistyped known ones not); its items go through the
 * rule of their event type, compiled from the declaration of the stream whose records they are (src/sync/deliveries.ts,
 * given by the wiring), so a reading is validated by one declaration whichever way it arrived. An item that breaks it
 * is quarantined with its reason, as a polled record is, and the delivery is accepted.
 *
 * Hand-written rather than a schema library: this runs once per delivery on the receiver's hot path, where zod took
 * ~35 us of a ~260 us delivery (docs/performance.md).
 */


// Any UUID version: the API promises UUIDs but not which kind.
const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
// ISO 8601 with a zone (Z or an offset), which is then normalised to UTC with milliseconds.
const ISO_WITH_ZONE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/;
const MAX_TEXT = 100;

/** A field that is not what the API documents: its path in the body and what is wrong, never the value. */
class ShapeError extends Error {
  constructor(
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${field}: ${problem}`);
  }
}

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

function kind(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
}

function uuid(object: Json, key: string, path: string): string {
  const value = object[key];
  if (typeof value !== 'string') throw new ShapeError(path, `expected a UUID string, got ${kind(value)}`);
  if (!UUID.test(value)) throw new ShapeError(path, 'must be a UUID');
  return value;
}

function shortText(object: Json, key: string, path: string): string {
  const value = object[key];
  if (typeof value !== 'string') throw new ShapeError(path, `expected a string, got ${kind(value)}`);
  if (value.length === 0 || value.length > MAX_TEXT) throw new ShapeError(path, `must be 1 to ${MAX_TEXT} characters`);
  return value;
}

function timestamp(object: Json, key: string, path: string): string {
  const value = object[key];
  if (typeof value !== 'string') throw new ShapeError(path, `expected an ISO 8601 timestamp string, got ${kind(value)}`);
  if (!ISO_WITH_ZONE.test(value)) {
    throw new ShapeError(path, 'must be an ISO 8601 timestamp with a zone, e.g. 2026-01-01T10:00:00Z');
  }
  try {
    return canonicalTimestamp(value, path);
  } catch {
    throw new ShapeError(path, 'is not a valid date');
  }
}

export interface ParsedDelivery {
  delivery: Omit<DeliveryRecord, 'receivedAt'>;
  occupancy: OccupancyRecord[];
  /** Items that broke their stream's declaration (quarantined with the delivery), and that stream. */
  rejected: { stream: string; records: QuarantinedRecord[] } | undefined;
}

// Fatal: invalid UTF-8 is refused instead of being replaced with U+FFFD and stored as something never sent. A byte
// order mark is kept in the text (not silently dropped), so it can be refused: the stored body is the signed bytes.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * An envelope's times against each other and the receiver's clock (`at`: its now, and the skew allowed, the
 * signature's tolerance): an event is created before it is sent, and neither is in the future, nor before 1970 (the
 * first instant a reading may have). Stored, one such delivery's readings were the latest of their spaces for good.
 */
function checkTimes(createdAt: string, sentAt: string, at: { nowMs: number; skewMs: number }): void {
  const created = Date.parse(createdAt);
  const sent = Date.parse(sentAt);
  for (const [field, ms] of [['Created', created], ['Sent', sent]] as const) {
    if (ms > at.nowMs + at.skewMs) throw new ShapeError(field, `is ${Math.round((ms - at.nowMs) / 1000)} s ahead of the receiver's clock, more than WEBHOOK_TOLERANCE (${at.skewMs / 1000} s)`);
    if ((field === 'Created' ? createdAt : sentAt) < FIRST_READING) throw new ShapeError(field, 'is before 1970, earlier than any reading can be');
  }
  if (created > sent + at.skewMs) throw new ShapeError('Created', `is ${Math.round((created - sent) / 1000)} s after Sent: an event is sent after it is created`);
}

/**
 * Decodes, parses and validates the raw decompressed body; with `at`, its times too (checkTimes). Throws a 400
 * `Refusal` naming the field at fault.
 */
export function parseDelivery(rawBody: Buffer, rules: ReadonlyMap<string, DeliveryRule>, at?: { nowMs: number; skewMs: number }): ParsedDelivery {
  let text: string;
  try {
    text = utf8.decode(rawBody);
  } catch (error) {
    throw new Refusal(400, 'invalid_utf8', {}, { cause: error });
  }
  // RFC 8259 forbids a sender to add one; kept, SQL's JSON functions could not read the stored body.
  if (text.charCodeAt(0) === 0xfeff) throw new Refusal(400, 'byte_order_mark', { bytes: rawBody.length });
  const strict = checkStrictJson(text);
  if (strict) {
    const reason = strict.problem === 'syntax' ? 'invalid_json' : strict.problem;
    throw new Refusal(400, reason, { bytes: rawBody.length, at: strict.at });
  }
  const json: unknown = JSON.parse(text);
  let id: string | undefined;
  try {
    if (!isObject(json)) throw new ShapeError('(body)', `expected an object, got ${kind(json)}`);
    id = uuid(json, 'Id', 'Id');
    const type = shortText(json, 'Type', 'Type');
    const customerId = uuid(json, 'CustomerId', 'CustomerId');
    const createdAt = timestamp(json, 'Created', 'Created');
    const sentAt = timestamp(json, 'Sent', 'Sent');
    if (at) checkTimes(createdAt, sentAt, at);
    const data = json.Data;
    if (!Array.isArray(data)) throw new ShapeError('Data', `expected an array, got ${kind(data)}`);

    const occupancy: OccupancyRecord[] = [];
    const rule = rules.get(type);
    let rejected: ParsedDelivery['rejected'];
    if (rule) {
      const envelope = json as Json;
      for (const item of data) {
        const result = rule.read(item, envelope);
        if (result.ok) occupancy.push(result.record);
        else (rejected ??= { stream: rule.stream, records: [] }).records.push(result.rejected);
      }
    }
    return { delivery: { id, customerId, type, createdAt, sentAt, body: text }, occupancy, rejected };
  } catch (error) {
    if (!(error instanceof ShapeError)) throw error;
    // The delivery id only once it is known to be one (it is logged).
    const where = error.field.startsWith('Data.') && id ? { deliveryId: id } : {};
    throw new Refusal(400, 'invalid_delivery', { field: error.field, problem: error.problem, ...where });
  }
}
