import { describe, expect, it } from 'vitest';
import { CHANGE_ONLY_MAX_HOLD_MS, DEFAULT_SAMPLING_INTERVAL_MS, defaultMaxHold } from '../../src/time-weight.ts';
import { defineStream, type AnyStream } from '../../src/sync/stream.ts';
import { buildings, occupancy } from '../../jobs/index.ts';
import { parseDefinitionsText, refusalLines } from '../support/definitions.ts';

/**
 * How a stream's sensors report (`sampling`, `samplingInterval`, `maxHold`; docs/api-assumptions.md, "Streams") and
 * what the compiled stream carries for the reports (`sampling`, `maxHoldMs`; docs/reporting.md, "The hold rule").
 */

const MIN = 60_000;
const HOUR = 60 * MIN;

const DOCUMENTS: Record<string, string> = {
  '/defs/readings.graphql': 'query Readings($from: DateTime!, $to: DateTime!) { readings(from: $from, to: $to) { id at space people status } }',
  '/defs/sites.graphql': 'query Sites { sites { id name } }',
};

const parse = (text: string) => parseDefinitionsText(DOCUMENTS, text);

/** A readings stream with `extra` lines (each `key: value`) after its kind. */
function readings(...extra: string[]): string {
  return `version: 2
streams:
  - name: occupancy
    document: readings.graphql
    sink: occupancy
    kind: incremental
${extra.map((line) => `    ${line}\n`).join('')}    paging: { style: single, records: readings, maxPageSize: 500 }
    variables: { from: '{{window.from}}', to: '{{window.to}}' }
    record:
      floorSpaceId: { path: space, type: id }
      observedAt: { path: at, type: timestamp }
      occupancyStatus: { path: status, type: text }
      headcount: { path: people, type: count, nullable: true }
    cursorField: observedAt
`;
}

function stream(text: string): AnyStream {
  return parse(text).streams[0]!;
}

const errors = (text: string): string[] => refusalLines(() => parse(text));

describe('sampling in the definitions format', () => {
  it('a readings stream that declares nothing samples at an interval, and holds a reading 3 x 5 minutes', () => {
    expect(stream(readings())).toMatchObject({ sampling: 'interval', maxHoldMs: 15 * MIN });
    expect(stream(readings()).samplingIntervalMs).toBeUndefined();
    expect(defaultMaxHold('interval')).toBe(3 * DEFAULT_SAMPLING_INTERVAL_MS);
  });

  it('interval sensors hold 3 intervals of their declared samplingInterval; change-only sensors a day', () => {
    expect(stream(readings('sampling: interval', 'samplingInterval: 1m'))).toMatchObject({ sampling: 'interval', samplingIntervalMs: MIN, maxHoldMs: 3 * MIN });
    expect(stream(readings('samplingInterval: 10m'))).toMatchObject({ sampling: 'interval', samplingIntervalMs: 10 * MIN, maxHoldMs: 30 * MIN });
    expect(stream(readings('sampling: change'))).toMatchObject({ sampling: 'change', maxHoldMs: CHANGE_ONLY_MAX_HOLD_MS });
    expect(CHANGE_ONLY_MAX_HOLD_MS).toBe(24 * HOUR);
  });

  it('maxHold sets the hold whatever the sampling', () => {
    expect(stream(readings('sampling: change', 'maxHold: 8h'))).toMatchObject({ sampling: 'change', maxHoldMs: 8 * HOUR });
    expect(stream(readings('samplingInterval: 5m', 'maxHold: 5m'))).toMatchObject({ samplingIntervalMs: 5 * MIN, maxHoldMs: 5 * MIN });
    expect(stream(readings('maxHold: 90s'))).toMatchObject({ sampling: 'interval', maxHoldMs: 90_000 });
  });

  it('the built-in readings stream samples every 5 minutes by default; other sinks carry no sampling', () => {
    expect(occupancy).toMatchObject({ sampling: 'interval', maxHoldMs: 15 * MIN });
    expect(buildings.sampling).toBeUndefined();
    expect(buildings.maxHoldMs).toBeUndefined();
  });

  it('a stream built in code gets the default sampling too, so every readings stream has one', () => {
    const built = defineStream({ ...occupancy, sampling: undefined, maxHoldMs: undefined } as never) as AnyStream;
    expect(built).toMatchObject({ sampling: 'interval', maxHoldMs: 15 * MIN });
    const change = defineStream({ ...occupancy, sampling: 'change', maxHoldMs: undefined } as never) as AnyStream;
    expect(change).toMatchObject({ sampling: 'change', maxHoldMs: 24 * HOUR });
  });

  it('each problem is one line naming the field, the value and the fix', () => {
    expect(errors(readings('sampling: sometimes'))).toEqual([
      '/defs/streams.yaml:7:15: sampling string "sometimes" is not a sampling. Fix: write sampling: interval (the sensors send a reading every few minutes) or sampling: change (an event only when a status changes)',
    ]);
    expect(errors(readings('samplingInterval: 300'))).toEqual([
      '/defs/streams.yaml:7:23: samplingInterval number 300 is not a duration (a number without a unit could be seconds or milliseconds). Fix: write it with a unit, e.g. samplingInterval: 5m',
    ]);
    expect(errors(readings("maxHold: '900'"))).toEqual([
      '/defs/streams.yaml:7:14: maxHold string "900" is not a duration (a number without a unit could be seconds or milliseconds). Fix: write it with a unit, e.g. maxHold: 15m',
    ]);
    expect(errors(readings('sampling: change', 'maxHold: 0h'))).toEqual([
      '/defs/streams.yaml:8:14: maxHold string "0h" is not a duration. Fix: write it with a unit, e.g. maxHold: 24h',
    ]);
    expect(errors(readings('sampling: change', 'samplingInterval: 5m'))).toEqual([
      '/defs/streams.yaml:8:5: a change-only stream has no sampling interval: its readings come when a status changes. Fix: remove samplingInterval, or set maxHold to say how long a reading holds',
    ]);
    expect(errors(readings('samplingInterval: 15m', 'maxHold: 10m'))).toEqual([
      '/defs/streams.yaml:8:14: maxHold 10m is shorter than samplingInterval 15m: the time between two samples would be unknown. Fix: set maxHold to at least the interval (the default is 3 intervals), or remove it',
    ]);
  });

  it('only a stream that stores readings declares how its sensors report', () => {
    const text = `version: 2
streams:
  - name: sites
    document: sites.graphql
    sink: buildings
    kind: full
    sampling: change
    maxHold: 1h
    paging: { style: single, records: sites, maxPageSize: 100 }
    record:
      id: { path: id, type: id }
      name: { path: name, type: string }
`;
    expect(errors(text)).toEqual([
      "/defs/streams.yaml:7:5: sampling says how sensors report readings, and this stream's sink is buildings, not occupancy. Fix: remove sampling",
      "/defs/streams.yaml:8:5: maxHold says how sensors report readings, and this stream's sink is buildings, not occupancy. Fix: remove maxHold",
    ]);
  });
});
