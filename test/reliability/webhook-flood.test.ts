import { randomUUID } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, expect, it } from 'vitest';
import { INFLATER_BYTES, PendingBudget } from '../../src/webhooks/body.ts';
import { DEFAULT_MAX_PENDING_BYTES } from '../../src/webhooks/handler.ts';
import { signatureHeader } from '../../src/webhooks/signature.ts';
import { SECRET_A, delivery, send } from '../webhooks/helpers.ts';
import { publishFigures } from './figures.ts';
import { spawnTs } from '../support/process.ts';
import { waitFor, within } from '../support/wait.ts';
import { tempDir } from '../support/tmp.ts';

/**
 * Memory before authentication, over real sockets: a few hundred connections each send 15 KiB of gzip that would
 * inflate to ~15 MiB, with a well-formed but wrong signature, and then stall. The receiver (its own process) inflates
 * each as it arrives, holds as many as its budget of unauthenticated bytes allows inflaters and refuses the rest
 * with 503; what it holds must stay within 16 MiB of its resting size, and its peak RSS while inflating within
 * PEAK_BOUND_MIB of it; it must answer and store valid deliveries while the flood's connections are still held (not
 * queued behind them: they never end on their own), and give the memory back once the flood ends.
 */

const FLOOD = 300;
/** The receiver's budget of unauthenticated bytes: the default, as receiver-child.ts leaves it. */
const BUDGET = DEFAULT_MAX_PENDING_BYTES;
/** Live memory (heap and buffers after a full GC) the flood may add: the inflaters' quarter of the budget, and more. */
const LIVE_BOUND_MIB = 16;
const RSS_BOUND_MIB = 128;
/**
 * The peak RSS the flood may add, inflating included (docs/webhooks.md, "Memory before authentication"): the
 * inflaters' quarter of the budget, the flood's wire bytes, and the heap and buffers the connections churn through
 * before the collector runs. Inflating a bomb allocates nothing per byte (src/webhooks/inflate.ts); with node's zlib
 * stream, which allocates a buffer per chunk, the same flood peaked above this bound (docs/webhooks.md).
 */
const PEAK_BOUND_MIB = 64;
/** A loaded 2-core machine inflates the flood (each byte hashed) in well under this (docs/webhooks.md has the times). */
const SETTLE_MS = 45_000;
const tmp = tempDir('flood-');
afterAll(() => tmp.remove());

interface Mem {
  rss: number;
  peakRss: number;
  heap: number;
  external: number;
  pending: number;
}

interface State {
  pending: number;
  inFlight: number;
  inflating: number;
}

it(`${FLOOD} stalled unauthenticated gzip uploads hold at most ${LIVE_BOUND_MIB} MiB, valid deliveries keep being stored, memory returns`, async () => {
  const child = spawnTs('test/reliability/webhook-receiver-child.ts', [join(tmp.dir, 'flood.db')], { nodeFlags: ['--expose-gc'], stdin: 'pipe', stderr: 'inherit' });
  const mem = async (): Promise<Mem> => {
    child.write('mem\n');
    return JSON.parse(await child.nextLine('the receiver to report its memory')) as Mem;
  };
  const state = async (): Promise<State> => {
    child.write('state\n');
    return JSON.parse(await child.nextLine('the receiver to report its state')) as State;
  };
  const sockets: Socket[] = [];
  try {
    const { url } = JSON.parse(await child.nextLine('the receiver to print its URL')) as { url: string };
    const { port } = new URL(url);
    const now = Math.floor(Date.now() / 1000);
    const valid = async () => {
      const body = Buffer.from(JSON.stringify(delivery({ Id: randomUUID(), Created: new Date().toISOString(), Sent: new Date().toISOString() })));
      const started = performance.now();
      const res = await send(url, { headers: { 'Content-Type': 'application/json', 'X-Service-Signature': signatureHeader(SECRET_A, body, now) }, body });
      return { status: res.status, ms: performance.now() - started };
    };
    const stored = async (): Promise<number> => {
      child.write('stored\n');
      return (JSON.parse(await child.nextLine('the receiver to count its stored deliveries')) as { stored: number }).stored;
    };
    expect((await valid()).status).toBe(200);
    const resting = await mem();
    const storedBefore = await stored();
    child.write('reset-peak\n');
    await child.nextLine('the receiver to start a new peak RSS');

    // 15 KiB of gzip that inflates to ~15.5 MiB: the upload is cut there and never finished.
    const bomb = gzipSync(Buffer.alloc(16 * 1024 * 1024, 0), { level: 9 });
    const part = bomb.subarray(0, Math.min(bomb.length - 16, 15 * 1024));
    const header =
      `POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n` +
      `X-Service-Signature: ${signatureHeader(SECRET_A, 'not this body', now)}\r\nContent-Length: ${bomb.length}\r\n\r\n`;
    // What each connection was answered (its status line), or '' while it is held.
    const answers = new Map<Socket, string>();
    for (let i = 0; i < FLOOD; i++) {
      const socket = connect(Number(port), '127.0.0.1');
      socket.on('error', () => {});
      answers.set(socket, '');
      socket.on('data', (d: Buffer) => answers.set(socket, `${answers.get(socket)}${d.toString('latin1')}`.split('\r\n')[0]!));
      sockets.push(socket);
      socket.write(header);
      socket.write(part);
    }
    await Promise.all(sockets.map((s) => new Promise((resolve) => (s.connecting ? s.once('connect', resolve) : resolve(undefined)))));
    // Inflaters may take a quarter of the budget: the others are refused at once (the platform would retry), not held.
    const inflating = new PendingBudget(BUDGET).maxInflaters;
    const held = inflating * (INFLATER_BYTES + part.length);
    // Until the receiver has taken in and inflated all that was sent: every refused connection has its answer, the
    // held ones' bytes are all in the pending budget, and no gzip body has bytes left to inflate. Each is exact, read
    // from the receiver without disturbing it (no GC, unlike `mem`), so a busy machine only makes this take longer.
    let last: State | undefined;
    const refused = () => [...answers.values()].filter((s) => s !== '').length;
    await waitFor(
      async () => {
        last = await state();
        return refused() === FLOOD - inflating && last.pending === held && last.inflating === 0;
      },
      'the flood to be taken in and inflated (every refusal answered, the held bytes pending, nothing left to inflate)',
      SETTLE_MS,
      { everyMs: 50 },
    ).catch((error: Error) => {
      throw new Error(`${error.message}; last state ${JSON.stringify(last)}, ${refused()} of ${FLOOD - inflating} refusals answered`, { cause: error });
    });
    let during = await mem();
    const statuses = [...answers.values()];
    expect(statuses.filter((s) => s === '').length, JSON.stringify([...new Set(statuses)])).toBe(inflating);
    expect(statuses.filter((s) => s.startsWith('HTTP/1.1 503 ')).length, JSON.stringify([...new Set(statuses)])).toBe(FLOOD - inflating);
    expect(during.pending).toBe(held);
    // Valid deliveries are served beside the flood, not behind it: the held uploads never end on their own (they
    // stall until this test closes them), so a delivery queued behind them would never be answered. Each one is
    // answered 200 and stored while every held connection is still unanswered and the pending budget still holds
    // exactly what the flood sent. (Latencies go to `measured` only: a duration is no assertion on a busy machine.)
    const latencies: number[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await within(valid(), `valid delivery ${i + 1} of 5 to be answered while the flood is held`, 30_000);
      expect(r.status).toBe(200);
      latencies.push(r.ms);
      expect(await stored()).toBe(storedBefore + i + 1);
      expect([...answers.values()].filter((s) => s === '').length, 'flood connections still held, unanswered').toBe(inflating);
      expect((await mem()).pending, 'pending bytes: the flood still held, the valid delivery released').toBe(held);
    }
    during = await mem();
    // The highest RSS since the flood began (inflating, holding, serving the valid deliveries): what the attack cost
    // at its worst, not what is left after a GC.
    const peakMiB = (during.peakRss - resting.rss) / 2 ** 20;
    expect(peakMiB, `peak RSS ${peakMiB.toFixed(1)} MiB above rest`).toBeLessThanOrEqual(PEAK_BOUND_MIB);
    // What the flood holds is the live memory after a full GC (the heap, buffers and zlib's state, which Node counts
    // as external): bounded by the budget, whatever the flood's size. RSS after it also keeps pages freed meanwhile
    // (V8 and the allocator return them lazily), so it only has to stay below a ceiling that a retained flood (every
    // bomb held inflated) would pass many times over.
    const liveMiB = (during.heap + during.external - (resting.heap + resting.external)) / 2 ** 20;
    expect(liveMiB, `live memory grew ${liveMiB.toFixed(1)} MiB`).toBeLessThanOrEqual(LIVE_BOUND_MIB);
    const growthMiB = (during.rss - resting.rss) / 2 ** 20;
    expect(growthMiB, `RSS grew ${growthMiB.toFixed(1)} MiB`).toBeLessThanOrEqual(RSS_BOUND_MIB);
    expect(during.pending).toBe(held);

    for (const s of sockets) s.destroy();
    let after = await mem();
    await waitFor(async () => (after = await mem()).pending === 0, 'the pending budget to return to 0 once the sockets closed', 5_000, { everyMs: 100 });
    expect(after.pending).toBe(0);
    // What the flood held is gone from the heap and the buffers (RSS itself may keep freed pages mapped).
    expect((after.heap + after.external - (resting.heap + resting.external)) / 2 ** 20).toBeLessThan(8);
    expect(
      publishFigures({
        section: 'webhook-flood',
        title: 'Memory before authentication: a flood of stalled gzip uploads (receiver in its own process)',
        rows: [
          {
            key: 'webhook-flood/stalled-gzip',
            tried: `${FLOOD} connections each sending 15 KiB of gzip that inflates to ~15.5 MiB, a wrong signature, then stalling`,
            count: FLOOD,
            held:
              `each inflated as it arrived; ${inflating} held (inflaters take at most a quarter of the 32 MiB budget), the other ${FLOOD - inflating} refused 503 at once; ` +
              `live memory growth <= ${LIVE_BOUND_MIB} MiB (RSS <= ${RSS_BOUND_MIB} MiB); then 5 valid deliveries answered 200 and stored while every held upload still stalled; nothing pending and the heap back within 8 MiB after`,
          },
        ],
        measured: {
          restingRssMiB: +(resting.rss / 2 ** 20).toFixed(1),
          floodRssGrowthMiB: +growthMiB.toFixed(1),
          floodLiveGrowthMiB: +liveMiB.toFixed(1),
          pendingBytesDuringFlood: during.pending,
          floodPeakRssGrowthMiB: +peakMiB.toFixed(1),
          validDeliveryMaxMs: +Math.max(...latencies).toFixed(1),
          heapAndBuffersAfterMiB: +((after.heap + after.external) / 2 ** 20).toFixed(1),
        },
      }),
    ).toEqual([]);
  } finally {
    for (const s of sockets) s.destroy();
    child.process.stdin!.end();
    await child.exit(30_000, 'the receiver to exit once its stdin is closed');
  }
}, 120_000);
