import { sql } from '../../db/schema/drizzle.ts';
import { StoreError } from '../errors.ts';
import type { Executor } from './adapter.ts';
import type { AggregateKeeper } from './aggregate-store.ts';
import type { PageSpans } from './aggregate-page-invalidations.ts';
import type { DeclaredSinks } from './declare-tables.ts';
import { quarantineRecords } from './quarantine.ts';
import { normaliseState, type Normalised } from './state-rows.ts';
import { canonicalTimestamp } from './timestamps.ts';
import type { IsoUtc, PageWrite, QuarantineWrite } from './types.ts';

/**
 * A sync page's write inside a transaction the store opened (store.ts commits one or several pages in one): its rows
 * with the aggregates' share, its rejected records quarantined, its checkpoint under the watermark rule, its run's
 * counters. The checks that need no database come first, in `readyPage`, before any transaction starts.
 */

/** A page checked and ready for its transaction. */
export interface ReadyPage {
  page: PageWrite;
  sink: ReturnType<DeclaredSinks['sinkOf']>;
  at: IsoUtc;
  state: Normalised;
  quarantine: QuarantineWrite | undefined;
  window: { from: IsoUtc; to: IsoUtc } | null;
}

export function readyPage(sinks: DeclaredSinks, page: PageWrite): ReadyPage {
  if (page.checkpoint.customerId !== page.customerId) {
    throw new StoreError(`checkpoint customer "${page.checkpoint.customerId}" does not match the page's customer "${page.customerId}"`);
  }
  const sink = sinks.sinkOf(page);
  const at = canonicalTimestamp(page.at, 'page.at');
  const state = normaliseState(page.checkpoint);
  const quarantine = page.quarantine && page.quarantine.records.length > 0 ? page.quarantine : undefined;
  const window = quarantine?.window
    ? { from: canonicalTimestamp(quarantine.window.from, 'quarantine.window.from'), to: canonicalTimestamp(quarantine.window.to, 'quarantine.window.to') }
    : null;
  return { page, sink, at, state, quarantine, window };
}

/** Writes a ready page in `tx`; what it made stale (the run's refresh counts it once committed). `now`: epoch ms. */
export async function writePage(tx: Executor, ready: ReadyPage, aggregates: AggregateKeeper, now: number): Promise<PageSpans> {
  const { page, sink, at, state, quarantine, window } = ready;
  const spans = await aggregates.around(tx, page.sink, page.customerId, page.records, at, () => tx.upsert(sink, { customerId: page.customerId, at, source: 'poll' }, page.records));
  if (quarantine) await quarantineRecords(tx, page.customerId, quarantine, window, at, page.runId ?? null);
  await writeState(tx, state, now);
  if (page.runId !== undefined) {
    const rejected = quarantine?.records.length ?? 0;
    await tx.runAhead(
      sql`UPDATE sync_runs SET pages = pages + 1, records = records + ${page.records.length}, rejected = rejected + ${rejected}
          WHERE id = ${page.runId}`,
      (changed) => {
        if (changed === 0) throw new StoreError(`run ${page.runId} does not exist`);
      },
    );
  }
  return spans;
}

/**
 * The single place the watermark rule lives: the upsert only applies when the stored watermark is absent or not
 * newer than the new one (NULL never replaces a value). When the guard refuses, nothing changed and the caller's
 * transaction rolls back with it. `now` (epoch ms) is the row's updated_at.
 */
export async function writeState(tx: Executor, s: Normalised, now: number): Promise<void> {
  await tx.runAhead(sql`
    INSERT INTO sync_state (customer_id, stream, watermark, window_start, window_end, page_cursor, windows, range_start,
                            range_end, updated_at)
    VALUES (${s.customerId}, ${s.stateKey}, ${s.watermark}, ${s.windowStart}, ${s.windowEnd}, ${s.pageCursor},
            ${s.windows}, ${s.rangeStart}, ${s.rangeEnd}, ${new Date(now).toISOString()})
    ON CONFLICT (customer_id, stream) DO UPDATE SET
      watermark = excluded.watermark, window_start = excluded.window_start, window_end = excluded.window_end,
      page_cursor = excluded.page_cursor, windows = excluded.windows, range_start = excluded.range_start,
      range_end = excluded.range_end, updated_at = excluded.updated_at
    WHERE sync_state.watermark IS NULL OR excluded.watermark >= sync_state.watermark`, async (changed) => {
    if (changed > 0) return;
    const [current] = await tx.all<{ watermark: string | null }>(
      sql`SELECT watermark FROM sync_state WHERE customer_id = ${s.customerId} AND stream = ${s.stateKey}`,
    );
    throw new StoreError(
      `refusing to move the watermark of ${s.customerId}/${s.stateKey} backwards ` +
        `from ${current?.watermark ?? 'none'} to ${s.watermark ?? 'none'}; watermarks only move forward`,
    );
  });
}
