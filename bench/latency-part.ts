import type { Dialect } from '../test/support/databases.ts';
import { LatencyBench, type LatencyFigures, type LatencySettings } from './latency-bench.ts';
import { formatNumber } from './stats.ts';

/**
 * The latency part of `npm run bench` (bench/run.ts): its flags, its run over the dialects, and the header of its
 * block in docs/performance.md. The measurement itself is bench/latency-bench.ts, the rows bench/latency-table.ts.
 */

/** Issue 25's platform: 100 ms per answer (the modes choose the allowances and dialects), no per-second limit. */
export const LATENCY_MS = 100;

/** The flags that make a run an experiment (docs/performance.md is then written only when asked). */
export const LATENCY_FLAGS = ['latency-ms', 'in-flight', 'per-second', 'latency-rows'];

/** A whole number >= min from --name, or `fallback`; anything else names the flag and the fix. */
function wholeFlag(args: Map<string, string>, name: string, min: number, fallback: number): number;
function wholeFlag(args: Map<string, string>, name: string, min: number, fallback?: number): number | undefined;
function wholeFlag(args: Map<string, string>, name: string, min: number, fallback?: number): number | undefined {
  const text = args.get(name);
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min) throw new Error(`--${name} ${text}: use a whole number >= ${min}`);
  return value;
}

/** --latency-ms, --in-flight, --per-second, --latency-rows over the mode's defaults. */
export function latencySettings(args: Map<string, string>, defaults: { rows: number; runs: number; inFlight: number[] }): LatencySettings {
  const inFlight = (args.get('in-flight') ?? defaults.inFlight.join(',')).split(',').map(Number);
  if (inFlight.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`--in-flight ${args.get('in-flight')}: use whole numbers >= 1, comma-separated (e.g. 8,2)`);
  const perSecond = wholeFlag(args, 'per-second', 1);
  return {
    rows: wholeFlag(args, 'latency-rows', 1, defaults.rows),
    latencyMs: wholeFlag(args, 'latency-ms', 0, LATENCY_MS),
    inFlight,
    ...(perSecond !== undefined && { perSecond }),
    runs: defaults.runs,
  };
}

/** Every comparison on each dialect, with the bench already recorded (`started`); closes it. */
export async function measureLatency(started: Promise<LatencyBench>, settings: LatencySettings, dialects: Dialect[], log: (line: string) => void): Promise<LatencyFigures> {
  log(`Latency: ${formatNumber(settings.rows)} readings of a 50-space site, recorded at the default window and page size`);
  const latency = await started;
  try {
    const l: LatencyFigures = {
      rows: settings.rows,
      pages: latency.pages,
      latencyMs: settings.latencyMs,
      ...(settings.perSecond !== undefined && { perSecond: settings.perSecond }),
      runs: settings.runs,
      pageSize: latency.plan.pageSize,
      stepMs: latency.plan.stepMs,
      dialects: {},
    };
    for (const dialect of dialects) {
      log(`Latency, ${dialect}: ${settings.runs} run(s) of ours and the minimal client at ${settings.inFlight.join(' and ')} in flight (${settings.latencyMs} ms per answer) and of the storage ceiling, rotating`);
      l.dialects[dialect] = await latency.compare(dialect, settings);
    }
    return l;
  } finally {
    await latency.close();
  }
}

/** The first line of the latency block: the run, the recording, and which way the ratio reads. */
export function latencyHeader(mode: string, machine: string, l: LatencyFigures): string {
  return (
    `Mode \`${mode}\`, ${machine}, medians of ${l.runs} run(s), most in flight: the most of any run. ` +
    `${formatNumber(l.rows)} readings = ${l.pages} pages of up to ${formatNumber(l.pageSize)} in windows of ${l.stepMs / 60_000} min (the defaults). ` +
    'Ratio: the floor\'s time / ours (= our rate / the floor\'s rate): 1.00 is the floor, higher is better (issue 25 measured 0.11 and 0.44).'
  );
}
