import type { SyncState, SyncStateUpdate } from '../store/types.ts';
import { epochMsOrNull, isoUtcOrNull, toIsoUtc } from '../time.ts';
import type { Frontier, WindowProgress } from './frontier.ts';
import type { RunRequest } from './stream-run.ts';
import {
  advanceWatermark,
  nextBackfillWindow,
  planBackfill,
  planIncremental,
  trustedServerTime,
  watermarkLimit,
  type InFlightWindow,
  type PlanReason,
  type SyncWindow,
  type WindowSettings,
} from './windows.ts';

/**
 * The plan of one windowed run (an incremental stream's, or a backfill's) and the checkpoint after each of its commits.
 * Pure: the stored state, `now` and the answers' times come in; the state to store comes out. Instants are epoch ms
 * here; the stored state's ISO text is converted in `fromStore` and `toStore`, nowhere else.
 */

/** The stored state in the engine's terms. */
export interface EngineState {
  watermark: number | null;
  head: { from: number; to: number; cursor: string | null } | null;
  /** Windows after the head read at the same time: started (a cursor) or complete. */
  beyond: ReadonlyArray<{ from: number; to: number; cursor: string | null; done: boolean }>;
}

export function fromStore(state: SyncState | undefined): EngineState {
  const from = epochMsOrNull(state?.windowStart);
  const to = epochMsOrNull(state?.windowEnd);
  return {
    watermark: epochMsOrNull(state?.watermark),
    head: from !== null && to !== null ? { from, to, cursor: state?.pageCursor ?? null } : null,
    beyond: (state?.windows ?? []).map((w) => ({ from: epochMsOrNull(w.from)!, to: epochMsOrNull(w.to)!, cursor: w.cursor, done: w.done })),
  };
}

export function toStore(state: EngineState): Pick<SyncStateUpdate, 'watermark' | 'windowStart' | 'windowEnd' | 'pageCursor' | 'windows'> {
  return {
    watermark: isoUtcOrNull(state.watermark),
    windowStart: isoUtcOrNull(state.head?.from ?? null),
    windowEnd: isoUtcOrNull(state.head?.to ?? null),
    pageCursor: state.head?.cursor ?? null,
    ...(state.beyond.length && { windows: state.beyond.map((w) => ({ from: toIsoUtc(w.from), to: toIsoUtc(w.to), cursor: w.cursor, done: w.done })) }),
  };
}

/** What a committed page tells the checkpoint about time. */
export interface PageTimes {
  /** The platform's time (its `Date` header), when it sent one. */
  serverTime?: number;
  /** The local clock when the answer arrived. */
  localTime: number;
  /** The page's newest record. */
  newest?: number;
}

export interface Checkpoint {
  state: Omit<EngineState, 'beyond'>;
  /**
   * Set once per run, at the first checkpoint where the platform's clock and the local one were too far apart to trust
   * either (SYNC_MAX_CLOCK_SKEW): only the newest record read moves the watermark. The caller warns.
   */
  untrustedClocks?: { platformTime: number; localTime: number; newest: number | undefined };
}

export interface RunPlan {
  /** The windows to read, in order, with what a stopped run had already read of those after its head. */
  windows: Array<SyncWindow & { done: boolean }>;
  /** now - settle delay (a backfill: or the range's end). */
  limit: number;
  /** Why there is nothing to read, when `windows` is empty. */
  reason?: PlanReason;
  windowsTotal: number;
  windowsDone: number;
  /** The backfill's range as stored (an incremental run keeps what is stored). */
  range: { rangeStart: string | null; rangeEnd: string | null };
  /** A backfill that starts over and drops stored progress (`--restart`): the range it had. */
  restarted?: { rangeStart: string; rangeEnd: string | null };
  /** A backfill resumed from stored progress: where. */
  resumed?: { windowStart: number; mid: boolean };
  /** The state after a commit: the frontier's head, and the watermark after the windows just completed. */
  checkpoint(frontier: Frontier, completed: ReadonlyArray<WindowProgress>, page: PageTimes): Checkpoint;
}

export interface RunPlanInput {
  request: RunRequest;
  state: SyncState | undefined;
  now: number;
  settings: WindowSettings & { gridMs: number; maxClockSkewMs: number };
}

export function planRun(input: RunPlanInput): RunPlan {
  return input.request.mode === 'backfill' ? planBackfillRun(input, input.request) : planIncrementalRun(input);
}

function planBackfillRun(input: RunPlanInput, request: Extract<RunRequest, { mode: 'backfill' }>): RunPlan {
  const { state, settings } = input;
  const stored = fromStore(state);
  const plan = planBackfill({
    now: input.now,
    range: { from: request.from, to: request.to },
    state: state && !request.restart ? { inFlight: inFlightOf(stored), rangeStart: epochMsOrNull(state.rangeStart), rangeEnd: epochMsOrNull(state.rangeEnd) } : null,
    settings,
  });
  const watermark = stored.watermark;
  return {
    windows: resumed(plan.windows, plan.restart ? [] : stored.beyond),
    limit: plan.limit,
    ...(plan.reason && { reason: plan.reason }),
    windowsTotal: plan.windowsTotal,
    windowsDone: plan.windowsDone,
    range: { rangeStart: toIsoUtc(request.from), rangeEnd: toIsoUtc(request.to) },
    ...(plan.restart && state?.rangeStart && { restarted: { rangeStart: state.rangeStart, rangeEnd: state.rangeEnd } }),
    ...(!plan.restart && stored.head && { resumed: { windowStart: stored.head.from, mid: stored.head.cursor !== null } }),
    checkpoint: (frontier) => {
      const h = headOf(frontier, true);
      if (h) return { state: { watermark, head: h } };
      // Every planned window is done; the range may go on beyond now - settle delay: the next run starts there.
      const next = nextBackfillWindow(frontier.windows.at(-1)!.to, request, settings.stepMs, settings.gridMs);
      return { state: { watermark, head: next && { from: next.windowStart, to: next.windowEnd, cursor: null } } };
    },
  };
}

function planIncrementalRun(input: RunPlanInput): RunPlan {
  const { state, settings } = input;
  const stored = fromStore(state);
  const plan = planIncremental({ now: input.now, watermark: stored.watermark, inFlight: inFlightOf(stored), settings });
  let watermark = stored.watermark;
  let newest: number | undefined;
  let warned = false;
  return {
    windows: resumed(plan.windows, stored.beyond),
    limit: plan.limit,
    ...(plan.reason && { reason: plan.reason }),
    windowsTotal: plan.windows.length,
    windowsDone: 0,
    range: { rangeStart: state?.rangeStart ?? null, rangeEnd: state?.rangeEnd ?? null },
    checkpoint: (frontier, completed, page) => {
      if (page.newest !== undefined && (newest === undefined || page.newest > newest)) newest = page.newest;
      const last = completed.at(-1);
      let untrustedClocks: Checkpoint['untrustedClocks'];
      if (last) {
        // The platform's time of the latest answer: the window holds nothing the platform had not produced then.
        const server = trustedServerTime(page.serverTime, page.localTime, settings.maxClockSkewMs);
        let limit = watermarkLimit(plan.limit, server.time, settings.settleDelayMs);
        if (server.ignored) {
          // Neither clock can be trusted: only the data proves how far the platform has produced. No record, no move.
          limit = Math.min(limit, newest ?? Number.NEGATIVE_INFINITY);
          if (!warned) {
            warned = true;
            untrustedClocks = { platformTime: page.serverTime!, localTime: page.localTime, newest };
          }
        }
        if (Number.isFinite(limit)) watermark = advanceWatermark(watermark, last.to, limit);
      }
      return { state: { watermark, head: headOf(frontier, false) }, ...(untrustedClocks && { untrustedClocks }) };
    },
  };
}

function inFlightOf(stored: EngineState): InFlightWindow | null {
  return stored.head && { windowStart: stored.head.from, windowEnd: stored.head.to, pageCursor: stored.head.cursor };
}

/** The windows a stopped run read ahead, carried onto this run's plan where their bounds are the same. */
function resumed(windows: ReadonlyArray<SyncWindow>, beyond: EngineState['beyond']): Array<SyncWindow & { done: boolean }> {
  const progress = new Map(beyond.map((w) => [`${w.from}/${w.to}`, w]));
  return windows.map((w) => {
    const stored = progress.get(`${w.from}/${w.to}`);
    return stored && w.cursor === null ? { ...w, cursor: stored.done ? null : stored.cursor, done: stored.done } : { ...w, done: false };
  });
}

/** The frontier's head as stored: a backfill always keeps it (its progress); an incremental run only mid-window. */
function headOf(frontier: Frontier, always: boolean): EngineState['head'] {
  const h = frontier.head;
  return h && (always || h.cursor !== null) ? { from: h.from, to: h.to, cursor: h.cursor } : null;
}

/** Where the stored state goes back to (see `rewindOnEvidence`). */
export type Rewind = { progress: InFlightWindow } | { watermark: number };

/**
 * An answer holding records outside the window asked for (the earliest at `earliest`) proves the platform reads the
 * bounds otherwise than sent (a time zone, a unit): every window this run committed may have been read wrongly, and
 * so may the time the stray records come from. The state goes back over both, to the bounds' grid (a backfill: to
 * its window there); undefined when the stored state (`current`, read after the run) is already there.
 */
export function rewindOnEvidence(input: {
  request: RunRequest;
  plan: Pick<RunPlan, 'windows'>;
  earliest: number;
  current: SyncState | undefined;
  stepMs: number;
  gridMs: number;
}): Rewind | undefined {
  const { request, current, stepMs, gridMs } = input;
  const target = Math.floor(Math.min(input.plan.windows[0]!.from, input.earliest) / gridMs) * gridMs;
  if (request.mode === 'backfill') {
    const progress = epochMsOrNull(current?.windowStart) ?? (current?.rangeStart ? Number.POSITIVE_INFINITY : null);
    const from = Math.max(request.from, Math.floor((target - request.from) / stepMs) * stepMs + request.from);
    if (progress === null || progress <= from) return undefined;
    const first = nextBackfillWindow(from, { from: request.from, to: request.to }, stepMs, gridMs);
    return first ? { progress: first } : undefined;
  }
  const watermark = epochMsOrNull(current?.watermark);
  return watermark === null || watermark <= target ? undefined : { watermark: target };
}
