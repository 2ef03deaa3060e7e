import type { SyncState, SyncStateUpdate } from '../../store/types.ts';
import { epochMsOrNull, isoUtcOrNull, toIsoUtc } from '../../time.ts';
import type { Frontier } from './frontier.ts';
import type { RunRequest, SyncWindow, WindowProgress } from './types.ts';

export type { SyncWindow } from './types.ts';

/**
 * The plan of one windowed run (an incremental stream's, or a backfill's): the windows it reads and the checkpoint
 * after each of its commits. Pure: no I/O, no clock (`now` is passed in); the stored state, `now` and the answers'
 * times come in, the state to store comes out. Instants are epoch ms here; the stored state's ISO text is converted
 * in `fromStore` and `toStore`, nowhere else.
 *
 * Rules (docs/sync.md, "Window semantics"):
 * - Windows are half-open [from, to): a row whose cursor equals a boundary belongs to exactly one window.
 * - An incremental run covers [max(watermark - lookback, floor), now - settleDelay), or starts at
 *   now - initialHistory when there is no watermark yet, cut into `step`-long windows.
 * - A checkpoint (an in-flight window and the cursor of its last committed page) is resumed first, at that cursor.
 * - The watermark moves to a window's end only when the window is complete, never backwards, and never beyond
 *   now - settleDelay, nor beyond the platform's time - settleDelay when known. When the clock went backwards
 *   (now - settleDelay < watermark) nothing runs.
 */

/** The stored state in the engine's terms. */
export interface EngineState {
  watermark: number | null;
  head: { from: number; to: number; cursor: string | null } | null;
  /** Windows after the head read at the same time: started (a cursor) or complete. */
  beyond: ReadonlyArray<{ from: number; to: number; cursor: string | null; done: boolean }>;
  /** A backfill's range as asked (it identifies the backfill); an incremental run keeps what is stored. */
  range: { from: number | null; to: number | null };
}

export function fromStore(state: SyncState | undefined): EngineState {
  const from = epochMsOrNull(state?.windowStart);
  const to = epochMsOrNull(state?.windowEnd);
  return {
    watermark: epochMsOrNull(state?.watermark),
    head: from !== null && to !== null ? { from, to, cursor: state?.pageCursor ?? null } : null,
    beyond: (state?.windows ?? []).map((w) => ({ from: epochMsOrNull(w.from)!, to: epochMsOrNull(w.to)!, cursor: w.cursor, done: w.done })),
    range: { from: epochMsOrNull(state?.rangeStart), to: epochMsOrNull(state?.rangeEnd) },
  };
}

export type StoredProgress = Pick<SyncStateUpdate, 'watermark' | 'windowStart' | 'windowEnd' | 'pageCursor' | 'windows' | 'rangeStart' | 'rangeEnd'>;

export function toStore(state: EngineState): StoredProgress {
  return {
    watermark: isoUtcOrNull(state.watermark),
    windowStart: isoUtcOrNull(state.head?.from ?? null),
    windowEnd: isoUtcOrNull(state.head?.to ?? null),
    pageCursor: state.head?.cursor ?? null,
    rangeStart: isoUtcOrNull(state.range.from),
    rangeEnd: isoUtcOrNull(state.range.to),
    ...(state.beyond.length && { windows: state.beyond.map((w) => ({ from: toIsoUtc(w.from), to: toIsoUtc(w.to), cursor: w.cursor, done: w.done })) }),
  };
}


export interface WindowSettings {
  lookbackMs: number;
  settleDelayMs: number;
  stepMs: number;
  initialHistoryMs: number;
  /** Window bounds lie on this grid (epoch ms; default 1): a stream that sends its bounds as dates needs whole days. */
  gridMs?: number;
}

/**
 * Why windows `stepMs` long cannot be cut on the bounds' grid (`gridMs`: a whole day for bounds sent as dates, a
 * second for epoch seconds), or undefined when they can. A step set in the definitions file is checked when it is
 * loaded; SYNC_STEP (or --step) only when a run or a probe takes it, so both ask here.
 */
export function stepOffGrid(stepMs: number, gridMs: number): { detail: string; fix: string } | undefined {
  if (stepMs % gridMs === 0) return undefined;
  return {
    detail: `its window bounds lie on a grid of ${gridMs} ms (a date is a whole day), and its windows are ${stepMs} ms long`,
    fix: `set \`window: { step: ... }\` for the stream to a multiple of it (e.g. ${gridMs % 86_400_000 === 0 ? '1d' : '1h'})`,
  };
}

const down = (t: number, grid: number) => Math.floor(t / grid) * grid;
const up = (t: number, grid: number) => Math.ceil(t / grid) * grid;

export interface InFlightWindow {
  windowStart: number;
  windowEnd: number;
  pageCursor: string | null;
}

export type PlanReason = 'clock-behind' | 'up-to-date' | 'complete';

export interface Plan {
  windows: SyncWindow[];
  /** now - settleDelay: no window reaches beyond it. */
  limit: number;
  /** Why there is nothing to do, when `windows` is empty. */
  reason?: PlanReason;
}

/** Cuts [start, end) into windows of `step`, aligned on `origin` (default: start). */
export function sliceWindows(start: number, end: number, step: number, origin = start): SyncWindow[] {
  if (!(step > 0)) throw new RangeError(`step must be positive, got ${step}`);
  const windows: SyncWindow[] = [];
  let from = start;
  while (from < end) {
    const cell = Math.floor((from - origin) / step) + 1;
    const to = Math.min(origin + cell * step, end);
    windows.push({ from, to, cursor: null });
    from = to;
  }
  return windows;
}

export function planIncremental(input: {
  now: number;
  watermark: number | null;
  inFlight: InFlightWindow | null;
  settings: WindowSettings;
  /** Never read before this instant (e.g. the start of the platform's data). */
  floor?: number;
}): Plan {
  const { now, watermark, inFlight, settings } = input;
  const grid = settings.gridMs ?? 1;
  const limit = down(now - settings.settleDelayMs, grid);
  if (watermark !== null && limit < watermark) return { windows: [], limit, reason: 'clock-behind' };

  const windows: SyncWindow[] = [];
  let start: number;
  if (inFlight) {
    // The window was planned with an earlier "now"; finishing it past the current limit would let the watermark
    // pass now - settleDelay, so it waits for the clock to catch up.
    if (inFlight.windowEnd > limit) return { windows: [], limit, reason: 'clock-behind' };
    windows.push({ from: inFlight.windowStart, to: inFlight.windowEnd, cursor: inFlight.pageCursor });
    start = inFlight.windowEnd;
  } else {
    start = watermark === null ? now - settings.initialHistoryMs : watermark - settings.lookbackMs;
    start = down(Math.max(start, input.floor ?? Number.NEGATIVE_INFINITY), grid);
  }
  for (const w of sliceWindows(start, limit, settings.stepMs)) windows.push(w);
  return windows.length ? { windows, limit } : { windows, limit, reason: 'up-to-date' };
}

/**
 * The furthest a watermark may move: the plan's limit (local now - settleDelay), and, when the platform told us its
 * time (the `Date` header of its latest answer), also that time - settleDelay. A local clock running ahead would
 * otherwise carry the watermark past data the platform has not produced yet, and once the clock is corrected those
 * rows would lie before watermark - lookback and never be read.
 */
export function watermarkLimit(planLimit: number, serverTime: number | undefined, settleDelayMs: number): number {
  return serverTime === undefined ? planLimit : Math.min(planLimit, serverTime - settleDelayMs);
}

/**
 * The platform's time, when it may be trusted to cap the watermark: only while it is within `maxSkewMs` of the local
 * clock (measured when the answer arrived). A front end whose clock is far off (a year behind, say) would otherwise
 * pin the watermark where it is and make every run re-read everything since; beyond the bound the local clock is
 * trusted instead and the caller warns. The `Date` header has whole seconds, hence the second of slack.
 */
export function trustedServerTime(serverTime: number | undefined, localTime: number, maxSkewMs: number): { time: number | undefined; ignored: boolean } {
  if (serverTime === undefined) return { time: undefined, ignored: false };
  return Math.abs(serverTime - localTime) <= maxSkewMs + 1000 ? { time: serverTime, ignored: false } : { time: undefined, ignored: true };
}

/** The watermark after a window completed: forward only, and never beyond the limit (see `watermarkLimit`). */
export function advanceWatermark(old: number | null, windowEnd: number, limit: number): number {
  const candidate = Math.min(windowEnd, limit);
  return old === null ? candidate : Math.max(old, candidate);
}

export interface BackfillState {
  /**
   * Progress of the backfill: the window being read (with the cursor of its last committed page), or the next
   * window to read (cursor null). Absent once the range is complete. A backfill keeps its progress here rather than
   * in the watermark, because a new range may start before the old one and watermarks only move forward.
   */
  inFlight: InFlightWindow | null;
  rangeStart: number | null;
  rangeEnd: number | null;
}

export interface BackfillPlan extends Plan {
  /** True when the stored state was for another range (or none): the backfill starts at `range.from`. */
  restart: boolean;
  /** Progress in whole step-cells of the full range, for progress display. */
  windowsTotal: number;
  windowsDone: number;
}

/**
 * A backfill of [from, to), on a grid of `step` aligned on `from` so windows stay the same across resumes. Same
 * range as the stored state: resume (nothing in flight means complete); another range: restart. No lookback (a
 * backfill is for old, settled data), but never beyond now - settleDelay.
 */
export function planBackfill(input: {
  now: number;
  range: { from: number; to: number };
  state: BackfillState | null;
  settings: Pick<WindowSettings, 'settleDelayMs' | 'stepMs' | 'gridMs'>;
}): BackfillPlan {
  const { now, state, settings } = input;
  if (!(input.range.from < input.range.to)) throw new RangeError(`backfill range is empty: from must be before to`);
  const step = settings.stepMs;
  const grid = settings.gridMs ?? 1;
  const restart = !state || state.rangeStart !== input.range.from || state.rangeEnd !== input.range.to;
  // The stored range stays as asked (it identifies the backfill); the windows cover it on the bounds' grid.
  const range = { from: down(input.range.from, grid), to: up(input.range.to, grid) };
  const limit = Math.min(range.to, down(now - settings.settleDelayMs, grid));
  const windowsTotal = Math.ceil((range.to - range.from) / step);
  if (!restart && !state!.inFlight) return { restart, windowsTotal, windowsDone: windowsTotal, limit, windows: [], reason: 'complete' };

  const inFlight = restart ? null : state!.inFlight;
  const progress = inFlight ? inFlight.windowStart : range.from;
  const base = { restart, windowsTotal, windowsDone: Math.floor((progress - range.from) / step), limit };
  const windows: SyncWindow[] = [];
  let start = progress;
  if (inFlight?.pageCursor) {
    // A cursor belongs to the exact window it was returned for: resume that window as it was.
    if (inFlight.windowEnd > limit) return { ...base, windows: [], reason: 'clock-behind' };
    windows.push({ from: inFlight.windowStart, to: inFlight.windowEnd, cursor: inFlight.pageCursor });
    start = inFlight.windowEnd;
  } else if (limit < progress) {
    return { ...base, windows: [], reason: 'clock-behind' };
  }
  for (const w of sliceWindows(start, limit, step, range.from)) windows.push(w);
  return windows.length ? { ...base, windows } : { ...base, windows, reason: 'up-to-date' };
}

/** The backfill window that follows one ending at `end` (cursor null: read from its start), or null at the range end. */
export function nextBackfillWindow(end: number, range: { from: number; to: number }, step: number, grid = 1): InFlightWindow | null {
  const [next] = sliceWindows(end, up(range.to, grid), step, down(range.from, grid));
  return next ? { windowStart: next.from, windowEnd: next.to, pageCursor: null } : null;
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
  /** The whole state to store with the page: the frontier's head, the watermark, the windows read ahead, the range. */
  state: EngineState;
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
  range: EngineState['range'];
  /** A backfill that starts over and drops stored progress (`--restart`): the range it had. */
  restarted?: { from: number; to: number | null };
  /** A backfill resumed from stored progress: where. */
  resumed?: { windowStart: number; mid: boolean };
  /** The state after a commit: the frontier's head, and the watermark after the windows just completed. */
  checkpoint(frontier: Frontier, completed: ReadonlyArray<WindowProgress>, page: PageTimes): Checkpoint;
}

export interface RunPlanInput {
  request: RunRequest;
  /** The stored state, in the engine's terms (`fromStore`). */
  state: EngineState;
  now: number;
  settings: WindowSettings & { gridMs: number; maxClockSkewMs: number };
}

export function planRun(input: RunPlanInput): RunPlan {
  return input.request.mode === 'backfill' ? planBackfillRun(input, input.request) : planIncrementalRun(input);
}

function planBackfillRun(input: RunPlanInput, request: Extract<RunRequest, { mode: 'backfill' }>): RunPlan {
  const { state: stored, settings } = input;
  const plan = planBackfill({
    now: input.now,
    range: { from: request.from, to: request.to },
    state: !request.restart ? { inFlight: inFlightOf(stored), rangeStart: stored.range.from, rangeEnd: stored.range.to } : null,
    settings,
  });
  const watermark = stored.watermark;
  const range = { from: request.from, to: request.to };
  return {
    windows: resumed(plan.windows, plan.restart ? [] : stored.beyond),
    limit: plan.limit,
    ...(plan.reason && { reason: plan.reason }),
    windowsTotal: plan.windowsTotal,
    windowsDone: plan.windowsDone,
    range,
    ...(plan.restart && stored.range.from !== null && { restarted: { from: stored.range.from, to: stored.range.to } }),
    ...(!plan.restart && stored.head && { resumed: { windowStart: stored.head.from, mid: stored.head.cursor !== null } }),
    checkpoint: (frontier) => {
      const beyond = beyondOf(frontier);
      const h = headOf(frontier, true);
      if (h) return { state: { watermark, head: h, beyond, range } };
      // Every planned window is done; the range may go on beyond now - settle delay: the next run starts there.
      const next = nextBackfillWindow(frontier.windows.at(-1)!.to, request, settings.stepMs, settings.gridMs);
      return { state: { watermark, head: next && { from: next.windowStart, to: next.windowEnd, cursor: null }, beyond, range } };
    },
  };
}

function planIncrementalRun(input: RunPlanInput): RunPlan {
  const { state: stored, settings } = input;
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
    range: stored.range,
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
      const state = { watermark, head: headOf(frontier, false), beyond: beyondOf(frontier), range: stored.range };
      return { state, ...(untrustedClocks && { untrustedClocks }) };
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

/** The windows read ahead of the head, kept in every checkpoint until the head completes. */
function beyondOf(frontier: Frontier): EngineState['beyond'] {
  return frontier.beyondHead.map((w) => ({ from: w.from, to: w.to, cursor: w.cursor, done: w.done }));
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
  current: EngineState;
  stepMs: number;
  gridMs: number;
}): Rewind | undefined {
  const { request, current, stepMs, gridMs } = input;
  const target = Math.floor(Math.min(input.plan.windows[0]!.from, input.earliest) / gridMs) * gridMs;
  if (request.mode === 'backfill') {
    const progress = current.head?.from ?? (current.range.from !== null ? Number.POSITIVE_INFINITY : null);
    const from = Math.max(request.from, Math.floor((target - request.from) / stepMs) * stepMs + request.from);
    if (progress === null || progress <= from) return undefined;
    const first = nextBackfillWindow(from, { from: request.from, to: request.to }, stepMs, gridMs);
    return first ? { progress: first } : undefined;
  }
  return current.watermark === null || current.watermark <= target ? undefined : { watermark: target };
}
