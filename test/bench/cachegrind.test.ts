import { describe, expect, it } from 'vitest';
import { parseCachegrind, perRow } from '../../bench/cachegrind.ts';

const file = (counts: Record<string, number[]>, summary: number) =>
  [
    'desc: I1 cache: 32768 B, 64 B, 8-way associative',
    'cmd: node x.js',
    'events: Ir',
    ...Object.entries(counts).flatMap(([fn, lines]) => ['fl=???', `fn=${fn}`, ...lines.map((n, i) => `${i + 1} ${n}`)]),
    `summary: ${summary}`,
    '',
  ].join('\n');

describe('cachegrind counts, per row between two runs', () => {
  it('sums each function\'s lines and reads the total from the summary', () => {
    const counts = parseCachegrind(file({ sqlite3VdbeExec: [10, 20], '???': [5], 'v8::Object::Get(v8::Local<v8::Context>, unsigned int)': [7] }, 42));
    expect(counts.total).toBe(42);
    expect(Object.fromEntries(counts.byFunction)).toEqual({ sqlite3VdbeExec: 30, '???': 5, 'v8::Object::Get(v8::Local<v8::Context>, unsigned int)': 7 });
  });

  it('what the rows between a short and a long run cost, without what both pay once', () => {
    const short = parseCachegrind(file({ start: [1000], row: [100] }, 1100));
    const long = parseCachegrind(file({ start: [1000], row: [400], late: [30] }, 1430));
    const per = perRow(long, 40, short, 10);
    expect(per.total).toBe(11);
    expect(Object.fromEntries(per.byFunction)).toEqual({ start: 0, row: 10, late: 1 });
    expect(() => perRow(short, 10, long, 40)).toThrow(/must hold more rows/);
  });

  it('a file without a summary is refused', () => {
    expect(() => parseCachegrind('events: Ir\nfn=x\n1 2\n')).toThrow(/no summary line/);
  });
});
