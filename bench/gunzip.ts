import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, gzipSync } from 'node:zlib';
import { readBody } from '../src/api/transport.ts';
import { flags } from './child.ts';
import { formatNumber, median } from './stats.ts';
import { mainThreadCpuMs } from './thread-cpu.ts';

/**
 * What reading a gzip answer costs the main thread (docs/performance.md, "An answer gunzipped in one piece"): the
 * transport's read (src/api/transport.ts: the compressed body collected, then gunzipped in one piece on the thread
 * pool) against the same body gunzipped as a stream in zlib's default 16 KiB pieces (the transport before), for
 * answers of the replay's two page sizes (600 and 5,000 readings). The compressed body arrives in 64 KiB pieces, as
 * from a socket. Rounds alternate the two; prints the medians per answer: the main thread's CPU, every thread's, and
 * the wall time. Linux (the main thread's CPU is read from /proc). Writes nothing.
 *
 *   node --import tsx bench/gunzip.ts [--rounds 5] [--readings 300000]
 */

const options = flags();
const rounds = Number(options.get('rounds') ?? 5);
const readings = Number(options.get('readings') ?? 300_000);
if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--rounds ${options.get('rounds')}: use a whole number, at least 1`);
if (!Number.isInteger(readings) || readings < 5000) throw new Error(`--readings ${options.get('readings')}: use a whole number, at least 5000`);

const LIMIT = 64 * 1024 * 1024;
const PIECE = 64 * 1024;

/** A GraphQL answer of `size` readings, gzipped, as the replay serves it. */
function answer(size: number): Buffer {
  const spaces = Array.from({ length: 50 }, () => randomUUID());
  const nodes = Array.from({ length: size }, (_, i) => ({
    id: randomUUID(),
    floorSpaceId: spaces[i % spaces.length],
    occupancyStatus: i % 3 === 0 ? 'VACANT' : 'OCCUPIED',
    headcount: i % 7,
    created: new Date(Date.UTC(2026, 0, 1) + Math.floor(i / spaces.length) * 300_000).toISOString(),
  }));
  return gzipSync(JSON.stringify({ data: { occupancy: { nodes, pageInfo: { hasNextPage: true, endCursor: 'c' } } } }));
}

const pieces = (body: Buffer) => Readable.from(Array.from({ length: Math.ceil(body.length / PIECE) }, (_, i) => body.subarray(i * PIECE, (i + 1) * PIECE)));

async function asStream(body: Buffer): Promise<Buffer> {
  const out: Buffer[] = [];
  await pipeline(pieces(body), createGunzip(), async (source: AsyncIterable<Buffer>) => {
    for await (const chunk of source) out.push(chunk);
  });
  return Buffer.concat(out);
}

const ways = {
  'the transport (one piece)': (body: Buffer) => readBody(pieces(body), 'gzip', LIMIT, new AbortController().signal),
  'a stream in 16 KiB pieces': asStream,
};
type Way = keyof typeof ways;

console.log(`| Answer | Read | Main thread CPU per answer | Every thread's CPU per answer | Wall per answer |`);
console.log(`| --- | --- | ---: | ---: | ---: |`);
for (const size of [600, 5000]) {
  const body = answer(size);
  const count = Math.ceil(readings / size);
  const expected = (await asStream(body)).length;
  const samples = new Map<Way, Array<{ main: number; all: number; wall: number }>>(Object.keys(ways).map((w) => [w as Way, []]));
  for (let round = 0; round < rounds + 1; round++) {
    const order = (Object.keys(ways) as Way[])[round % 2 === 0 ? 'slice' : 'reverse']();
    for (const way of order) {
      const main0 = mainThreadCpuMs() ?? Number.NaN;
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      for (let i = 0; i < count; i++) {
        const out = await ways[way](body);
        if (out.length !== expected) throw new Error(`${way}: ${out.length} bytes, expected ${expected}`);
      }
      const wall = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      // The first round warms both up and is not counted.
      if (round > 0) samples.get(way)!.push({ main: ((mainThreadCpuMs() ?? Number.NaN) - main0) / count, all: (cpu.user + cpu.system) / 1000 / count, wall: wall / count });
    }
  }
  for (const [way, list] of samples) {
    const ms = (pick: (s: { main: number; all: number; wall: number }) => number) => `${formatNumber(median(list.map(pick)), 3)} ms`;
    console.log(`| ${formatNumber(size)} readings, ${formatNumber(body.length)} B gzipped, ${formatNumber(expected)} B | ${way} | ${ms((s) => s.main)} | ${ms((s) => s.all)} | ${ms((s) => s.wall)} |`);
  }
}
console.log(`\nAnswers for ${formatNumber(readings)} readings of each size a round, medians of ${rounds} rounds after one to warm up; the main thread's CPU is read in 10 ms ticks over a round.`);
