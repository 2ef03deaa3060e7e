import { canonicalJson } from './replay-format.ts';

/**
 * Why a replayed query is not in the recording, and the fix for that cause, from the queries the recorded run sent
 * with the same key and operation. Pure: the replay answers with it (HTTP 400, so a client does not retry what can
 * never succeed).
 *
 * A command's windows are computed from its clock, so the usual cause is a replay run without the recorded clock:
 * every time it asks for is later than the recorded one by at most the time that passed since the recording. That
 * is told apart from other causes (another start state, other settings or documents), whose fixes differ. The first
 * sentence and the fix come first and stay short: a client may show only the start of a long message.
 */

export interface MissFacts {
  operation: string;
  key: string;
  asked: unknown;
  /** The variables of the recorded queries with the same key and operation. */
  recorded: readonly unknown[];
  /** The instant the recorded command's clock stood at. */
  clock: { frozenAt: string; epochMs: number };
  /** The replay's own time now (epoch ms). */
  now: number;
}

const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})$/i;

const instant = (value: unknown): number | undefined => (typeof value === 'string' && INSTANT.test(value) ? Date.parse(value) : undefined);

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The names whose values differ between two variable objects (compared as canonical JSON). */
function differing(a: Record<string, unknown>, b: Record<string, unknown>): string[] {
  return [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((k) => canonicalJson(a[k] ?? null) !== canonicalJson(b[k] ?? null)).sort();
}

/** How much later the asked instants are than this recorded query's, when instants are all that differ. */
function timeShift(asked: Record<string, unknown>, recorded: Record<string, unknown>): number | undefined {
  const names = differing(asked, recorded);
  if (names.length === 0) return undefined;
  const shifts = names.map((n) => {
    const a = instant(asked[n]);
    const r = instant(recorded[n]);
    return a === undefined || r === undefined ? undefined : a - r;
  });
  if (shifts.some((s) => s === undefined)) return undefined;
  return Math.min(...(shifts as number[]));
}

/** The replay's answer text for a query it does not hold. */
export function explainMiss(f: MissFacts): string {
  const shown = canonicalJson(f.asked);
  if (f.recorded.length === 0) {
    return (
      `not in the recording: the recorded run never sent ${f.operation} with ${f.key} (another command, other streams or documents). ` +
      `Fix: replay the recorded command with the recorded definitions; \`occupancy-sync sandbox --replay\` prints it. Asked: ${shown}`
    );
  }
  const elapsed = f.now - f.clock.epochMs;
  if (isObject(f.asked)) {
    const askedObject = f.asked;
    const shifts = f.recorded.filter(isObject).map((r) => timeShift(askedObject, r)).filter((s): s is number => s !== undefined);
    // Later, by no more than the time since the recording: the clock ran on.
    if (shifts.some((s) => s > 0 && s <= elapsed + 60_000)) {
      return (
        `not in the recording: this ${f.operation} asks for other times than the recorded run: the replayed command runs on its own clock, not the recording's (${f.clock.frozenAt}). ` +
        `Fix: run it with NODE_OPTIONS='--import=data:text/javascript,Date.now=()=>${f.clock.epochMs}' and a new database`
      );
    }
    if (shifts.length > 0) {
      return (
        `not in the recording: this ${f.operation} asks for other times than the recorded run, with the recorded clock or not: it started from other sync state or other settings. ` +
        'Fix: replay on a new database with the recorded clock, settings and start state (`occupancy-sync sandbox --replay` prints them; ' +
        `\`occupancy-sync record --load-state DIR\` loads the state). Asked: ${shown}`
      );
    }
  }
  return (
    `not in the recording: the recorded run never sent this ${f.operation} with ${f.key}: other settings (SYNC_PAGE_SIZE, the stream's paging), documents or start state. ` +
    `Fix: replay with the recorded settings and definitions on a new database (\`occupancy-sync sandbox --replay\` prints them). Asked: ${shown}`
  );
}
