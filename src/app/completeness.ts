import type { Store, SyncState } from '../store/types.ts';
import { runKeyOf, targetOf, type AnyStream } from '../sync/stream.ts';
import { toIsoUtc } from '../time.ts';

/**
 * The completeness alarm: a windowed stream that suddenly returns far fewer records than before still "succeeds",
 * and nothing else would notice. The last window before its watermark is compared with the same window a day and a
 * week earlier; fewer than `minShare` of the larger of those is `low`, none at all is `empty`.
 */

const DAY = 86_400_000;

/** A window must have held at least this many records before for a shortfall to mean anything. */
export const MIN_BASELINE = 10;

export type CompletenessStatus = 'ok' | 'low' | 'empty' | 'unknown';

export interface CompletenessVerdict {
  status: CompletenessStatus;
  /** current / baseline; null without a baseline. */
  ratio: number | null;
}

/** Pure: the verdict on `current` records against the earlier windows' counts. */
export function judgeCompleteness(current: number, earlier: ReadonlyArray<number>, minShare: number): CompletenessVerdict {
  const baseline = Math.max(0, ...earlier);
  if (baseline < MIN_BASELINE) return { status: 'unknown', ratio: null };
  const ratio = current / baseline;
  if (current === 0) return { status: 'empty', ratio };
  return { status: ratio < minShare ? 'low' : 'ok', ratio };
}

export interface CompletenessFinding extends CompletenessVerdict {
  customerId: string;
  stream: string;
  window: { from: string; to: string };
  current: number;
  /** The same window a day and a week earlier. */
  dayBefore: number;
  weekBefore: number;
}

/**
 * The verdict for every windowed stream of every customer with a watermark. Off (an empty list) when minShare is 0.
 */
export async function checkCompleteness(
  store: Store,
  streams: ReadonlyArray<AnyStream>,
  options: { minShare: number; windowMs: number; customerId?: string },
): Promise<CompletenessFinding[]> {
  if (options.minShare <= 0) return [];
  const windowed = new Map(streams.filter((s) => s.kind === 'incremental' && s.cursorField).map((s) => [s.name, s]));
  const findings: CompletenessFinding[] = [];
  for (const state of await watermarksOf(store, windowed, options.customerId)) {
    const stream = windowed.get(state.stateKey);
    if (!stream || !state.watermark) continue;
    const to = Date.parse(state.watermark);
    const count = (shift: number) =>
      store.countInWindow(targetOf(stream), stream.cursorField!, state.customerId, toIsoUtc(to - options.windowMs - shift), toIsoUtc(to - shift));
    const [current, dayBefore, weekBefore] = await Promise.all([count(0), count(DAY), count(7 * DAY)]);
    findings.push({
      customerId: state.customerId,
      stream: stream.name,
      window: { from: toIsoUtc(to - options.windowMs), to: state.watermark },
      current,
      dayBefore,
      weekBefore,
      ...judgeCompleteness(current, [dayBefore, weekBefore], options.minShare),
    });
  }
  return findings;
}

/**
 * The watermark of each windowed stream per customer: its state's, or for a fan-out stream (whose state is per parent,
 * `occupancy/<parent>`) the lowest of the partitions whose parent is still listed: the window before it is complete
 * for every parent read, and a removed parent's partition, for ever behind, says nothing of the others.
 */
async function watermarksOf(store: Store, windowed: ReadonlyMap<string, AnyStream>, customerId: string | undefined): Promise<Array<Pick<SyncState, 'customerId' | 'stateKey' | 'watermark'>>> {
  const states = await store.listStates(customerId);
  const out: Array<Pick<SyncState, 'customerId' | 'stateKey' | 'watermark'>> = states.filter((s) => runKeyOf(s.stateKey) === s.stateKey);
  const groups = new Map<string, SyncState[]>();
  for (const s of states) {
    if (runKeyOf(s.stateKey) === s.stateKey || !windowed.get(runKeyOf(s.stateKey))?.partition) continue;
    const k = `${s.customerId}\u0000${runKeyOf(s.stateKey)}`;
    groups.set(k, [...(groups.get(k) ?? []), s]);
  }
  for (const [k, group] of groups) {
    const [customer, key] = k.split('\u0000') as [string, string];
    const spec = windowed.get(key)!.partition!;
    const listed = new Set(await store.listedValues(spec.parentSink, spec.parentKey, customer));
    const marks = group.filter((s) => listed.has(s.stateKey.slice(key.length + 1))).map((s) => s.watermark);
    if (marks.length === 0 || marks.includes(null)) continue;
    out.push({ customerId: customer, stateKey: key, watermark: marks.reduce((a, b) => (b! < a! ? b : a)) });
  }
  return out;
}

/** One line per stream that needs a look, for `status` and logs. */
export function completenessLines(findings: ReadonlyArray<CompletenessFinding>): string[] {
  return findings
    .filter((f) => f.status === 'low' || f.status === 'empty')
    .map(
      (f) =>
        `  ${f.customerId} ${f.stream}: ${f.current} records in [${f.window.from}, ${f.window.to}) against ${Math.max(f.dayBefore, f.weekBefore)} ` +
        `the same window a day or a week earlier (${f.status === 'empty' ? 'none at all' : `${Math.round((f.ratio ?? 0) * 100)} %`}): ` +
        'check the platform and `occupancy-sync check` (COMPLETENESS_MIN_SHARE tunes this, 0 turns it off)',
    );
}
