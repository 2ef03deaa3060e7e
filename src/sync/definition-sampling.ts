import { parseDuration } from '../config.ts';
import { defaultMaxHold, type Sampling } from '../time-weight.ts';
import type { SinkName, StreamSink } from '../store/types.ts';
import { describeYaml, type YamlPath, type YamlSource } from './definition-yaml.ts';

/**
 * How a stream's sensors report (`sampling`, `samplingInterval`, `maxHold` in a definitions file), compiled to what
 * the reports weigh each reading by (docs/reporting.md, "The hold rule"): a reading holds until the space's next one,
 * at most `maxHoldMs`. Only a stream that stores readings (sink `occupancy`) declares it.
 */

export interface StreamSampling {
  sampling: Sampling;
  /** Interval sensors: the declared interval; absent when none was declared (the default is assumed) or change-only. */
  samplingIntervalMs?: number;
  maxHoldMs: number;
}

/** Every sampling, as the definitions format spells it. */
const SAMPLINGS: readonly Sampling[] = ['interval', 'change'];

/** The sink whose rows are readings, weighed by the time they hold. */
export const READINGS_SINK: SinkName = 'occupancy';

/** A duration written with its unit (`5m`, `90s`, `24h`): a bare number could be seconds or milliseconds. */
function durationAt(src: YamlSource, at: YamlPath, value: unknown, key: string, example: string): number | undefined {
  const ms = typeof value === 'string' && /^\s*\d+(\.\d+)?\s*(ms|s|m|h|d|w)\s*$/.test(value) ? parseDuration(value) : undefined;
  if (ms === undefined || ms < 1) {
    const unitless = typeof value === 'number' || (typeof value === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(value));
    src.error(at, `${key} ${describeYaml(value)} is not a duration${unitless && ms !== 0 ? ' (a number without a unit could be seconds or milliseconds)' : ''}`, `write it with a unit, e.g. ${key}: ${example}`);
    return undefined;
  }
  return ms;
}

/**
 * The stream's sampling from its `sampling`, `samplingInterval` and `maxHold` keys (each optional), or undefined with
 * one error per problem. A stream of another sink gets undefined and no error when it declares none.
 */
export function samplingAt(src: YamlSource, path: YamlPath, s: Record<string, unknown>, sink: StreamSink | undefined): StreamSampling | undefined {
  const declared = (['sampling', 'samplingInterval', 'maxHold'] as const).filter((k) => s[k] !== undefined);
  if (sink !== READINGS_SINK) {
    for (const key of declared) {
      src.error([...path, key], `${key} says how sensors report readings, and this stream's sink is ${String(sink)}, not ${READINGS_SINK}`, `remove ${key}`, { key: true });
    }
    return undefined;
  }
  const before = src.errors.length;
  let sampling: Sampling = 'interval';
  if (s.sampling !== undefined) {
    if (typeof s.sampling === 'string' && (SAMPLINGS as readonly string[]).includes(s.sampling)) sampling = s.sampling as Sampling;
    else {
      src.error(
        [...path, 'sampling'],
        `sampling ${describeYaml(s.sampling)} is not a sampling`,
        'write sampling: interval (the sensors send a reading every few minutes) or sampling: change (an event only when a status changes)',
      );
    }
  }
  let samplingIntervalMs: number | undefined;
  if (s.samplingInterval !== undefined) {
    if (s.sampling === 'change') {
      src.error([...path, 'samplingInterval'], 'a change-only stream has no sampling interval: its readings come when a status changes', 'remove samplingInterval, or set maxHold to say how long a reading holds', { key: true });
    } else samplingIntervalMs = durationAt(src, [...path, 'samplingInterval'], s.samplingInterval, 'samplingInterval', '5m');
  }
  let maxHoldMs: number | undefined;
  if (s.maxHold !== undefined) {
    maxHoldMs = durationAt(src, [...path, 'maxHold'], s.maxHold, 'maxHold', sampling === 'change' ? '24h' : '15m');
    if (maxHoldMs !== undefined && samplingIntervalMs !== undefined && maxHoldMs < samplingIntervalMs) {
      src.error(
        [...path, 'maxHold'],
        `maxHold ${String(s.maxHold)} is shorter than samplingInterval ${String(s.samplingInterval)}: the time between two samples would be unknown`,
        `set maxHold to at least the interval (the default is 3 intervals), or remove it`,
      );
    }
  }
  if (src.errors.length > before) return undefined;
  return {
    sampling,
    ...(samplingIntervalMs !== undefined && { samplingIntervalMs }),
    maxHoldMs: maxHoldMs ?? defaultMaxHold(sampling, samplingIntervalMs),
  };
}
