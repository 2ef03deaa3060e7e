import type { DeliveryRule, OccupancyRecord } from '../store/types.ts';
import { quarantinedRecord } from './contract.ts';
import { compileRecord, type RecordValidator } from './records.ts';
import type { AnyStream } from './stream.ts';

/**
 * The rules by which the webhook receiver reads a delivery's items (`DeliveryRule`): per event type, the stream whose
 * records they are and the validator compiled from that stream's declaration (src/sync/records.ts), so a reading is
 * checked by one declaration whichever way it arrived (polled or delivered). The wiring hands these to the receiver.
 *
 * By event type: the streams in force (a user's definitions over the built-in ones) first, then the built-in
 * streams' rules for the types no stream in force declares, so a definitions file that replaces a stream without
 * `deliveries` keeps the documented delivery shape.
 */
export function deliveryRules(inForce: ReadonlyArray<AnyStream>, builtin: ReadonlyArray<AnyStream> = []): Map<string, DeliveryRule> {
  const rules = new Map<string, DeliveryRule>();
  for (const stream of [...inForce, ...builtin]) {
    if (!stream.deliveries || rules.has(stream.deliveries.type)) continue;
    const validate: RecordValidator<OccupancyRecord> = compileRecord(stream.deliveries.record);
    rules.set(stream.deliveries.type, {
      stream: stream.name,
      read(item, envelope) {
        const result = validate(item, envelope);
        return result.ok ? result : { ok: false, rejected: quarantinedRecord(item, result.reason) };
      },
    });
  }
  return rules;
}
