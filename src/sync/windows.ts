/**
 * Pure window planning for incremental-window streams. No I/O, no clock: `now` is passed in.
 *
 * Rules (docs/sync.md, "Window semantics"):
 * - Windows are half-open [from, to): a row whose cursor equals a boundary belongs to exactly one window.
 * - An incremental run covers [max(watermark - lookback, floor), now - settleDelay), or starts at
 *   now - initialHistory when there is no watermark yet, cut into `step`-long windows.
 * - A checkpoint (an in-flight window and the cursor of its last committed page) is resumed first, at that cursor.
 * - The watermark moves to a window's end only when the window is complete, never backwards, and never beyond
 *   now - settleDelay, nor beyond the platform's time - settleDelay when known. When the clock went backwards (now - settleDelay < watermark) nothing runs.
 */

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

/** A half-open time window [from, to) in epoch ms; `cursor` resumes a window after its last committed page. */
export interface SyncWindow {
  from: number;
  to: number;
  cursor: string | null;
}

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
  windows.push(...sliceWindows(start, limit, settings.stepMs));
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
  windows.push(...sliceWindows(start, limit, step, range.from));
  return windows.length ? { ...base, windows } : { ...base, windows, reason: 'up-to-date' };
}

/** The backfill window that follows one ending at `end` (cursor null: read from its start), or null at the range end. */
export function nextBackfillWindow(end: number, range: { from: number; to: number }, step: number, grid = 1): InFlightWindow | null {
  const [next] = sliceWindows(end, up(range.to, grid), step, down(range.from, grid));
  return next ? { windowStart: next.from, windowEnd: next.to, pageCursor: null } : null;
}
