import { sql } from '../../db/schema/drizzle.ts';
import type { Executor } from './adapter.ts';
import type { IsoUtc, QuarantineWrite } from './types.ts';

/**
 * Records that broke their stream's declaration, kept in the transaction of the page or delivery that brought them: a
 * raw record seen again keeps its first sighting and counts the new one.
 */
export async function quarantineRecords(
  tx: Executor,
  customerId: string,
  quarantine: QuarantineWrite,
  window: { from: IsoUtc; to: IsoUtc } | null,
  at: IsoUtc,
  runId: number | null,
): Promise<void> {
  for (const r of quarantine.records) {
    await tx.run(sql`
      INSERT INTO quarantined_records (customer_id, stream, fingerprint, window_start, window_end, record, reason,
                                       first_run_id, last_run_id, first_seen_at, last_seen_at, times_seen)
      VALUES (${customerId}, ${quarantine.stream}, ${r.fingerprint}, ${window?.from ?? null}, ${window?.to ?? null},
              ${r.raw}, ${r.reason}, ${runId}, ${runId}, ${at}, ${at}, 1)
      ON CONFLICT (customer_id, stream, fingerprint) DO UPDATE SET
        last_run_id = excluded.last_run_id, last_seen_at = excluded.last_seen_at, reason = excluded.reason,
        times_seen = quarantined_records.times_seen + 1`);
  }
}
