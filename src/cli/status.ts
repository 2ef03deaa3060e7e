import { completenessLines, type CompletenessFinding } from '../app/completeness.ts';
import { dataCheckLines, type ReconciliationCount } from '../app/data-checks.ts';
import { formatCount } from '../numbers.ts';
import { CANONICAL_STATUSES, canonicalGuess } from '../statuses.ts';
import type { PendingAggregates, RunRecord, SyncState, UnmappedStatus } from '../store/types.ts';
import { runKeyOf } from '../sync/stream.ts';
import { formatDuration } from './progress.ts';

export interface StreamStatus {
  customerId: string;
  stream: string;
  watermark: string | null;
  /** now - watermark, in ms; null without a watermark. */
  lagMs: number | null;
  /** A window left unfinished (interrupted or failed run), resumed at `pageCursor` by the next run. */
  inFlight: { windowStart: string; windowEnd: string; pageCursor: string | null } | null;
  range: { start: string; end: string } | null;
  lastRun: Pick<RunRecord, 'id' | 'mode' | 'status' | 'startedAt' | 'finishedAt' | 'pages' | 'records' | 'rejected' | 'error'> | null;
  /** The completeness alarm's verdict on the window before the watermark (windowed streams; absent when off). */
  completeness?: CompletenessFinding;
  /**
   * Streams of readings: the customer's stored readings whose status is neither canonical nor mapped to one, per
   * status (whichever stream stored them; absent when there are none).
   */
  unmapped?: Array<Pick<UnmappedStatus, 'status' | 'readings'>>;
  /**
   * A fan-out stream's partitions (state keys `<stream>/<parent>`), folded into its entry: the parents in force (the
   * watermark and lag are the lowest of theirs), the partitions of parents no longer listed (not read; their state
   * stays), and the partitions with a window in flight.
   */
  partitions?: { inForce: number; removed: number; inFlight: number };
  /**
   * Streams of readings: the customer's floor spaces whose time-weighted aggregates poll pages or deliveries made stale and no
   * refresh has recomputed yet (docs/reporting.md, "When the aggregates are current"; absent when none).
   */
  aggregatesPending?: Omit<PendingAggregates, 'customerId'>;
}

/** Attaches each customer's pending invalidations to the entries of the streams that store readings. */
export function withPendingAggregates(entries: StreamStatus[], pending: ReadonlyArray<PendingAggregates>, readings: ReadonlySet<string>): StreamStatus[] {
  return entries.map((e) => {
    const found = pending.find((p) => p.customerId === e.customerId);
    if (!found || !readings.has(e.stream.split(/[#/]/)[0]!)) return e;
    const { customerId: _c, ...rest } = found;
    return { ...e, aggregatesPending: rest };
  });
}

/** One line per customer whose aggregates lag its readings. */
function pendingLines(pending: ReadonlyArray<PendingAggregates>): string[] {
  return pending.map((p) => `  ${p.customerId}: ${formatCount(p.floorSpaces)} floor space(s), readings from ${p.from} through ${p.through}, stale since ${p.since}`);
}

/** Attaches each customer's unmapped statuses to the entries of the streams that store readings (`readings`: their names). */
export function withUnmapped(entries: StreamStatus[], unmapped: ReadonlyArray<UnmappedStatus>, readings: ReadonlySet<string>): StreamStatus[] {
  return entries.map((e) => {
    const found = unmapped.filter((u) => u.customerId === e.customerId).map(({ status, readings: n }) => ({ status, readings: n }));
    // A backfill's (`occupancy#backfill`) and a partition's (`occupancy/<parent>`) state keys begin with the stream's name.
    return found.length > 0 && readings.has(e.stream.split(/[#/]/)[0]!) ? { ...e, unmapped: found } : e;
  });
}

/** One line per customer with readings stored under a status nobody mapped, with the map to add. */
export function unmappedLines(unmapped: ReadonlyArray<UnmappedStatus>): string[] {
  const byCustomer = new Map<string, UnmappedStatus[]>();
  for (const u of unmapped) byCustomer.set(u.customerId, [...(byCustomer.get(u.customerId) ?? []), u]);
  return [...byCustomer].map(([customer, list]) => {
    const counts = list.map((u) => `${formatCount(u.readings)} ${u.status}`).join(', ');
    const map = list.map((u) => `${u.status}: ${canonicalGuess(u.status)}`).join(', ');
    return `  ${customer}: ${counts}. Fix: map them to ${CANONICAL_STATUSES.join(' or ')} in the readings stream's occupancyStatus (map: { ${map} }), then \`occupancy-sync state rewind --stream <stream> --to <the first of them> --yes\` stores them again`;
  });
}

/** A fan-out stream's parents in force, per customer and run key (`${customerId}\u0000${stream}`); see buildStatus. */
export type ParentsInForce = ReadonlyMap<string, ReadonlySet<string>>;

/** Attaches each stream's completeness finding to its entry. */
export function withCompleteness(entries: StreamStatus[], findings: ReadonlyArray<CompletenessFinding>): StreamStatus[] {
  const byKey = new Map(findings.map((f) => [`${f.customerId}\u0000${f.stream}`, f]));
  return entries.map((e) => {
    const finding = byKey.get(`${e.customerId}\u0000${e.stream}`);
    return finding ? { ...e, completeness: finding } : e;
  });
}

/**
 * Joins states and last runs per customer and stream (a stream with runs but no state yet is listed too). A fan-out
 * stream's partitions are one entry, its stream's: its watermark is the lowest of the partitions whose parent is in
 * force (`parents`; without it, of all), so one row per stream however many spaces it reads.
 */
export function buildStatus(states: ReadonlyArray<SyncState>, runs: ReadonlyArray<RunRecord>, now: number, parents?: ParentsInForce): StreamStatus[] {
  const key = (c: string, s: string) => `${c}\u0000${s}`;
  const partitions = states.filter((s) => runKeyOf(s.stateKey) !== s.stateKey);
  states = states.filter((s) => runKeyOf(s.stateKey) === s.stateKey);
  const latest = new Map<string, RunRecord>();
  for (const run of runs) {
    const k = key(run.customerId, run.stateKey);
    const seen = latest.get(k);
    if (!seen || run.startedAt > seen.startedAt || (run.startedAt === seen.startedAt && run.id > seen.id)) latest.set(k, run);
  }
  const byKey = new Map<string, StreamStatus>();
  for (const state of states) {
    byKey.set(key(state.customerId, state.stateKey), {
      customerId: state.customerId,
      stream: state.stateKey,
      watermark: state.watermark,
      lagMs: state.watermark ? now - Date.parse(state.watermark) : null,
      inFlight: state.windowStart && state.windowEnd ? { windowStart: state.windowStart, windowEnd: state.windowEnd, pageCursor: state.pageCursor } : null,
      range: state.rangeStart && state.rangeEnd ? { start: state.rangeStart, end: state.rangeEnd } : null,
      lastRun: null,
    });
  }
  for (const [k, run] of latest) {
    const entry =
      byKey.get(k) ??
      { customerId: run.customerId, stream: run.stateKey, watermark: null, lagMs: null, inFlight: null, range: null, lastRun: null };
    const { id, mode, status, startedAt, finishedAt, pages, records, rejected, error } = run;
    entry.lastRun = { id, mode, status, startedAt, finishedAt, pages, records, rejected, error };
    byKey.set(k, entry);
  }
  const groups = new Map<string, SyncState[]>();
  for (const state of partitions) {
    const k = key(state.customerId, runKeyOf(state.stateKey));
    groups.set(k, [...(groups.get(k) ?? []), state]);
  }
  for (const [k, group] of groups) {
    const [customerId, stream] = k.split('\u0000') as [string, string];
    const entry = byKey.get(k) ?? { customerId, stream, watermark: null, lagMs: null, inFlight: null, range: null, lastRun: null };
    const listed = parents?.get(k);
    const inForce = group.filter((s) => !listed || listed.has(s.stateKey.slice(stream.length + 1)));
    const watermarks = inForce.map((s) => s.watermark);
    entry.watermark = watermarks.length === 0 || watermarks.includes(null) ? null : watermarks.reduce((a, b) => (b! < a! ? b : a));
    entry.lagMs = entry.watermark ? now - Date.parse(entry.watermark) : null;
    const first = group.find((s) => s.rangeStart && s.rangeEnd);
    if (first) entry.range = { start: first.rangeStart!, end: first.rangeEnd! };
    entry.partitions = { inForce: inForce.length, removed: group.length - inForce.length, inFlight: group.filter((s) => s.windowStart !== null).length };
    byKey.set(k, entry);
  }
  return [...byKey.values()].sort((a, b) => a.customerId.localeCompare(b.customerId) || a.stream.localeCompare(b.stream));
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n');
}

export function formatStatus(
  entries: ReadonlyArray<StreamStatus>,
  reconciliation: ReadonlyArray<ReconciliationCount> = [],
  unmapped: ReadonlyArray<UnmappedStatus> = [],
  pending: ReadonlyArray<PendingAggregates> = [],
): string {
  if (entries.length === 0) return 'No sync state yet: run `occupancy-sync sync` first.\n';
  const rows = [['CUSTOMER', 'STREAM', 'WATERMARK', 'LAG', 'LAST RUN', 'OUTCOME', 'PAGES', 'RECORDS', 'REJECTED']];
  for (const e of entries) {
    const run = e.lastRun;
    let outcome = run ? run.status : '-';
    if (e.inFlight) outcome += ' (window in flight)';
    if (e.partitions) {
      const { inForce, removed, inFlight } = e.partitions;
      outcome += ` [${inForce} partition(s)${removed ? `, ${removed} of parents no longer listed` : ''}${inFlight ? `, ${inFlight} with a window in flight` : ''}]`;
    }
    if (e.range) outcome += ` [range ${e.range.start} .. ${e.range.end}]`;
    rows.push([
      e.customerId,
      e.stream,
      e.watermark ?? '-',
      e.lagMs === null ? '-' : e.lagMs < 0 ? `ahead ${formatDuration(-e.lagMs)}` : formatDuration(e.lagMs),
      run ? `${run.startedAt} (${run.mode})` : '-',
      outcome,
      run ? String(run.pages) : '-',
      run ? String(run.records) : '-',
      run ? String(run.rejected) : '-',
    ]);
  }
  const errors = entries.filter((e) => e.lastRun?.status === 'failed' && e.lastRun.error).map((e) => `  ${e.customerId} ${e.stream}: ${e.lastRun!.error}`);
  const rejected = entries
    .filter((e) => (e.lastRun?.rejected ?? 0) > 0)
    .map((e) => `  ${e.customerId} ${e.stream}: ${e.lastRun!.rejected} record(s) broke their declared types and were quarantined (docs/sync.md, "Quarantine")`);
  const incomplete = completenessLines(entries.flatMap((e) => (e.completeness ? [e.completeness] : [])));
  const deliveries = dataCheckLines({ completeness: [], reconciliation: [...reconciliation] });
  const statuses = unmappedLines(unmapped);
  const stale = pendingLines(pending);
  return (
    `${table(rows)}\n` +
    (errors.length ? `\nLast errors:\n${errors.join('\n')}\n` : '') +
    (rejected.length ? `\nQuarantined in the last run:\n${rejected.join('\n')}\n` : '') +
    (incomplete.length ? `\nFar fewer records than before:\n${incomplete.join('\n')}\n` : '') +
    (deliveries.length ? `\nWebhook deliveries missing:\n${deliveries.join('\n')}\n` : '') +
    (statuses.length ? `\nReadings stored with an unmapped status (the reports count them neither occupied nor vacant):\n${statuses.join('\n')}\n` : '') +
    (stale.length
      ? `\nTime-weighted aggregates not refreshed yet (the views lag these readings until the run's next refresh, its end, \`occupancy-sync report\` or \`aggregates rebuild\`):\n${stale.join('\n')}\n`
      : '')
  );
}
