import { ConfigError } from './errors.ts';
import { maskSecret } from './logger.ts';
import { readSecretFile } from './secrets.ts';
import { parseIsoInstant } from './time.ts';
import type { Env } from './config-types.ts';

/**
 * The readers of single environment variables (durations, whole numbers, flags, shares, secrets) and the one way a
 * configuration error is worded: the variable, the value it got (secrets masked) and how to fix it.
 */

export const SECRET_VARS = new Set(['API_SECRET', 'WEBHOOK_SECRET', 'WEBHOOK_PREVIOUS_SECRET']);

export function fail(variable: string, value: string | undefined, problem: string, fix: string, options?: { secret?: boolean }): never {
  const secret = options?.secret || SECRET_VARS.has(variable);
  const shown = value === undefined ? '(unset)' : secret ? maskSecret(value) : JSON.stringify(value);
  throw new ConfigError(`${variable}=${shown}: ${problem}. Fix: ${fix}`);
}

export const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** Parses `1500ms`, `60s`, `15m`, `1h`, `7d`, `2w`, or a bare number of seconds. */
export function parseDuration(text: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?\s*$/.exec(text);
  if (!match) return undefined;
  const unit = DURATION_UNITS[match[2] ?? 's']!;
  return Math.round(Number(match[1]) * unit);
}

/** The longest wait a timer takes (Node's setTimeout: 2^31 - 1 ms, about 24.8 days): what a timeout may be at most. */
export const TIMER_MAX_MS = 2_147_483_647;
/** The longest span a setting of time ranges may be (ten years): longer ones are typing errors, and would plan millions of windows. */
export const SPAN_MAX_MS = 3650 * 86_400_000;

/**
 * The most a duration setting may be: the limit as messages and docs write it, why there is one, and the fix. A
 * setting whose meaning bounds it (a lookback every run re-reads, a replay window) has its own; the rest take the
 * timer's or the span's.
 */
export interface Ceiling {
  text: string;
  ms: number;
  why: string;
  fix: string;
}

/** A ceiling written as a duration (`1h`, `7d`): the text is the one definition of its value. */
export function ceiling(text: string, why: string, fix: string): Ceiling {
  const ms = parseDuration(text);
  if (ms === undefined) throw new RangeError(`not a duration: ${text}`);
  return { text, ms, why, fix };
}

export const TIMER_CEILING: Ceiling = { text: '24d', ms: TIMER_MAX_MS, why: 'the longest wait a timer takes', fix: 'use a smaller value' };
export const SPAN_CEILING: Ceiling = { text: '3650d', ms: SPAN_MAX_MS, why: 'ten years', fix: 'use a smaller value' };

export function duration(env: Env, variable: string, fallback: string, min = 0, max: Ceiling = SPAN_CEILING): number {
  const raw = env[variable]?.trim() || fallback;
  const ms = parseDuration(raw);
  if (ms === undefined) fail(variable, raw, 'not a duration', `use a number with a unit, e.g. 90s, 15m, 1h, 7d or 2w`);
  if (ms < min) fail(variable, raw, `must be at least ${min} ms`, `use a larger value`);
  if (ms > max.ms) fail(variable, raw, `must be at most ${max.text} (${max.why})`, max.fix);
  return ms;
}

/** A hundred years: the longest retention (a cutoff further back is no date a database holds). */
const RETENTION_MAX_MS = 36_500 * 86_400_000;

/** A retention period: a duration of at least an hour (at most RETENTION_MAX_MS), or `0`/`off` to keep everything (0 ms). */
export function retention(env: Env, variable: string, fallback: string): number {
  const raw = env[variable]?.trim().toLowerCase() || fallback;
  if (raw === '0' || raw === 'off') return 0;
  const ms = parseDuration(raw);
  if (ms === undefined || ms < 3_600_000 || ms > RETENTION_MAX_MS) {
    fail(variable, env[variable], 'must be a duration from 1h to 36500d (a hundred years), or off', `use e.g. 90d or 400d, or off to keep everything (the default is ${fallback})`);
  }
  return ms;
}

export function integer(env: Env, variable: string, fallback: number, min: number, max: number): number {
  const raw = env[variable]?.trim();
  if (!raw) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    fail(variable, raw, `must be an integer from ${min} to ${max}`, `set ${variable} to a whole number in that range`);
  }
  return n;
}

/** An opt-in: `true` turns it on; unset or `false` leaves it off; anything else is refused. */
export function flag(env: Env, variable: string): boolean {
  const raw = env[variable]?.trim().toLowerCase();
  if (!raw || raw === 'false') return false;
  if (raw === 'true') return true;
  fail(variable, env[variable], 'must be true or false', `set ${variable}=true to turn it on, or leave it unset`);
}

/** METRICS_TEXTFILE: node_exporter's textfile collector reads only files ending in .prom. */
export function textfilePath(env: Env): string | undefined {
  const raw = env.METRICS_TEXTFILE?.trim();
  if (!raw) return undefined;
  if (!raw.endsWith('.prom')) fail('METRICS_TEXTFILE', raw, 'must end in .prom (the textfile collector reads only those)', 'use e.g. /var/lib/node_exporter/textfile/occupancy_sync.prom');
  return raw;
}

/** An ISO 8601 instant with a zone (strict: the date must exist). */
export function instant(variable: string, text: string): number {
  const ms = parseIsoInstant(text);
  if (ms === undefined) fail(variable, text, 'not an ISO 8601 date-time with a zone', 'use e.g. 2026-03-01T12:00:00Z');
  return ms;
}

export function share(env: Env, variable: string, fallback: number): number {
  const raw = env[variable]?.trim();
  if (!raw) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0 || n > 1) fail(variable, raw, 'must be a share from 0 to 1', `set ${variable} to e.g. 0.5 (half)`);
  return n;
}

export function oneOf<T extends string>(env: Env, variable: string, values: readonly T[], fallback: T): T {
  const raw = env[variable]?.trim();
  if (!raw) return fallback;
  if (!(values as readonly string[]).includes(raw)) fail(variable, raw, `must be one of ${values.join(', ')}`, `set ${variable}=${fallback} (the default) or another of those values`);
  return raw as T;
}

/** A secret may come inline (`NAME`) or from a file (`NAME_FILE`, for systemd credentials and Docker secrets). */
export function secretFrom(env: Env, variable: string): string | undefined {
  const file = env[`${variable}_FILE`]?.trim();
  if (file) return readSecretFile(file, (problem, fix) => fail(`${variable}_FILE`, file, problem, fix));
  const value = env[variable];
  return value ? value.trim() : undefined;
}
