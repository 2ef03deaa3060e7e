import { randomBytes } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { GzipBody, InflateQueue } from '../../src/webhooks/inflate.ts';
import { within } from '../support/wait.ts';

/**
 * The step-wise inflater of unauthenticated bodies (src/webhooks/inflate.ts) reads a gzip stream exactly as node's
 * gunzipSync does (which the receiver uses once the body is authenticated): the same bytes, the same streams refused,
 * however the wire cuts the body, and without allocating a buffer per step.
 */

interface Outcome {
  bytes?: Buffer;
  error?: string;
  /** Distinct buffers the output came in (the one reused buffer: 1). */
  buffers: number;
  largestStep: number;
}

function inflate(wire: Buffer, cut: number, queue = new InflateQueue()): Promise<Outcome> {
  return within(
    new Promise<Outcome>((resolve) => {
      const parts: Buffer[] = [];
      const seen = new Set<ArrayBufferLike>();
      let largestStep = 0;
      const body = new GzipBody(queue, {
        output(bytes) {
          seen.add(bytes.buffer);
          largestStep = Math.max(largestStep, bytes.length);
          parts.push(Buffer.from(bytes));
          return true;
        },
        drained() {},
        ended: () => resolve({ bytes: Buffer.concat(parts), buffers: seen.size, largestStep }),
        failed: (error) => resolve({ error: error.message, buffers: seen.size, largestStep }),
      });
      for (let i = 0; i < wire.length; i += cut) body.write(wire.subarray(i, i + cut));
      body.end();
    }),
    'the inflater to settle',
    20_000,
  );
}

function reference(wire: Buffer): { bytes?: Buffer; error?: string } {
  try {
    return { bytes: gunzipSync(wire) };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

const text = Buffer.from(JSON.stringify({ Data: Array.from({ length: 2000 }, (_, i) => ({ i, s: 'occupied' })) }));
const bomb = gzipSync(Buffer.alloc(8 * 1024 * 1024, 0x20), { level: 9 });
const cases: Record<string, Buffer> = {
  'a delivery': gzipSync(text),
  'incompressible bytes': gzipSync(randomBytes(300 * 1024)),
  'two gzip members': Buffer.concat([gzipSync(text.subarray(0, 1000)), gzipSync(text.subarray(1000))]),
  'trailing zero padding': Buffer.concat([gzipSync(text), Buffer.alloc(64)]),
  'trailing garbage': Buffer.concat([gzipSync(text), Buffer.from('garbage')]),
  'cut short': gzipSync(text).subarray(0, 200),
  'corrupt in the middle': (() => {
    const wire = Buffer.from(gzipSync(randomBytes(64 * 1024)));
    wire.fill(0xff, 2000, 2100);
    return wire;
  })(),
  'not gzip': Buffer.from('definitely not gzip'),
  'empty': Buffer.alloc(0),
  'a bomb': bomb,
};

describe('the step-wise inflater reads gzip as gunzipSync does', () => {
  for (const [name, wire] of Object.entries(cases)) {
    it(`${name}: whole, in 1-byte writes and in 4 KiB writes`, async () => {
      const expected = reference(wire);
      for (const cut of [Math.max(1, wire.length), 1, 4096]) {
        if (cut === 1 && wire.length > 64 * 1024) continue;
        const got = await inflate(wire, cut);
        expect(got.error === undefined, `${name}, ${cut}-byte writes: ${got.error ?? 'inflated'}, gunzipSync: ${expected.error ?? 'inflated'}`).toBe(expected.error === undefined);
        if (expected.bytes) expect(got.bytes!.equals(expected.bytes), `${name}, ${cut}-byte writes: the same bytes`).toBe(true);
        expect(got.buffers).toBeLessThanOrEqual(1);
        expect(got.largestStep).toBeLessThanOrEqual(64 * 1024);
      }
    });
  }

  it('bodies inflating at once through one queue each get their own bytes', async () => {
    const queue = new InflateQueue();
    const wires = [gzipSync(text), bomb, gzipSync(randomBytes(200 * 1024))];
    const got = await Promise.all(wires.map((wire) => inflate(wire, 8 * 1024, queue)));
    got.forEach((g, i) => expect(g.bytes!.equals(gunzipSync(wires[i]!))).toBe(true));
    expect(queue.size).toBe(0);
  });
});
