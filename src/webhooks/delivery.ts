import { z } from 'zod';
import { toIsoUtc, type DeliveryRecord, type OccupancyRecord } from '../store/types.ts';
import { Refusal } from './refusal.ts';

/**
 * Parsing and validation of a delivery body (external API, section 2.6) into the records the store takes.
 * Unknown fields are allowed everywhere (the platform may add some); missing or mistyped known fields are not.
 */

export const OCCUPANCY_TYPE = 'Occupancy';

// Any UUID version: the API promises UUIDs but not which kind.
const uuid = z.string().regex(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/, 'must be a UUID');
// ISO 8601 with a zone (Z or an offset), which toIsoUtc() then normalises to UTC with milliseconds.
const isoTimestamp = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/, 'must be an ISO 8601 timestamp with a zone, e.g. 2026-01-01T10:00:00Z')
  .refine((value) => !Number.isNaN(Date.parse(value)), 'is not a valid date');

const envelopeSchema = z.looseObject({
  Id: uuid,
  Type: z.string().min(1).max(100),
  CustomerId: uuid,
  Created: isoTimestamp,
  Sent: isoTimestamp,
  Data: z.array(z.unknown()),
});

const occupancyItemSchema = z.looseObject({
  FloorSpaceId: uuid,
  OccupancyStatus: z.string().min(1).max(100),
  Headcount: z.number().int('must be an integer').min(0, 'must be 0 or more').max(Number.MAX_SAFE_INTEGER),
});

export interface ParsedDelivery {
  delivery: Omit<DeliveryRecord, 'receivedAt'>;
  occupancy: OccupancyRecord[];
}

/** Names the first problem: its path in the body and what is wrong, never the value (it could be anything). */
function describe(error: z.ZodError, prefix: string): Record<string, unknown> {
  const issue = error.issues[0]!;
  const field = [prefix, ...issue.path.map(String)].filter(Boolean).join('.');
  return { field: field || '(body)', problem: issue.message };
}

/** Decodes, parses and validates the raw decompressed body. Throws a 400 `Refusal` naming the field at fault. */
export function parseDelivery(rawBody: Buffer): ParsedDelivery {
  let text: string;
  try {
    // Fatal: invalid UTF-8 is refused instead of being replaced with U+FFFD and stored as something never sent.
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(rawBody);
  } catch (error) {
    throw new Refusal(400, 'invalid_utf8', {}, { cause: error });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new Refusal(400, 'invalid_json', { bytes: rawBody.length }, { cause: error });
  }
  const envelope = envelopeSchema.safeParse(json);
  if (!envelope.success) throw new Refusal(400, 'invalid_delivery', describe(envelope.error, ''));
  const { Id, Type, CustomerId, Created, Sent, Data } = envelope.data;

  const occupancy: OccupancyRecord[] = [];
  if (Type === OCCUPANCY_TYPE) {
    const observedAt = toIsoUtc(Created);
    for (const [index, item] of Data.entries()) {
      const parsed = occupancyItemSchema.safeParse(item);
      if (!parsed.success) {
        throw new Refusal(400, 'invalid_delivery', { ...describe(parsed.error, `Data.${index}`), deliveryId: Id });
      }
      occupancy.push({
        floorSpaceId: parsed.data.FloorSpaceId,
        observedAt,
        occupancyStatus: parsed.data.OccupancyStatus,
        headcount: parsed.data.Headcount,
        eventId: Id,
      });
    }
  }
  return {
    delivery: {
      id: Id,
      customerId: CustomerId,
      type: Type,
      createdAt: toIsoUtc(Created),
      sentAt: toIsoUtc(Sent),
      body: text,
    },
    occupancy,
  };
}
