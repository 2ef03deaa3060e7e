import { describe, expect, it } from 'vitest';
import { CheckpointPacing } from '../../src/store/sqlite/checkpoint-pacing.ts';

/**
 * The background checkpoints' interval (src/store/sqlite/checkpoint-pacing.ts), on a clock the test moves: 50 ms for
 * small commits (the webhook receiver's), longer while commits write the WAL in bulk (a sync's pages).
 */

const options = { baseMs: 50, maxMs: 800, bulkFramesPerCommit: 500 };

/** `commits` commits `gapMs` apart from `from`, then one checkpoint that finds `walFrames` frames. */
function round(pacing: CheckpointPacing, from: number, commits: number, gapMs: number, walFrames: number): number {
  let now = from;
  for (let i = 0; i < commits; i++) pacing.commit((now += gapMs));
  pacing.started();
  pacing.finished(walFrames);
  return now;
}

describe('CheckpointPacing', () => {
  it('keeps the base interval for small commits however fast they come (the receiver)', () => {
    const pacing = new CheckpointPacing(options);
    let now = 0;
    for (let wal = 100, i = 0; i < 50; i++, wal = (wal + 300) % 10_000) {
      now = round(pacing, now, 10, 5, wal);
      expect(pacing.intervalMs).toBe(50);
    }
  });

  it('doubles the interval per checkpoint while commits are large, up to its ceiling', () => {
    const pacing = new CheckpointPacing(options);
    let now = round(pacing, 0, 1, 100, 1_800);
    expect(pacing.intervalMs).toBe(50); // nothing to compare with yet
    const seen: number[] = [];
    let wal = 1_800;
    for (let i = 0; i < 6; i++) {
      wal += 2 * 1_800;
      // Past the bound the writer checkpointed itself and the WAL started over: what it holds now is what was written since.
      if (wal > 10_000) wal -= 10_000;
      now = round(pacing, now, 2, 100, wal);
      seen.push(pacing.intervalMs);
    }
    expect(seen).toEqual([100, 200, 400, 800, 800, 800]);
  });

  it('falls back to the base when two checkpoints in a row find small commits (one may hide a restart of the WAL)', () => {
    const pacing = new CheckpointPacing(options);
    let now = round(pacing, 0, 1, 100, 2_000);
    now = round(pacing, now, 1, 100, 4_000);
    now = round(pacing, now, 1, 100, 6_000);
    expect(pacing.intervalMs).toBe(200);
    // 25 frames a commit, or far more had the WAL restarted in between: kept, once.
    now = round(pacing, now, 20, 5, 6_500);
    expect(pacing.intervalMs).toBe(200);
    now = round(pacing, now, 20, 5, 7_000);
    expect(pacing.intervalMs).toBe(50);
    // A large reading in between clears the doubt.
    now = round(pacing, now, 1, 100, 9_000);
    now = round(pacing, now, 1, 100, 1_000);
    expect(pacing.intervalMs).toBe(200);
    now = round(pacing, now, 40, 5, 2_000);
    now = round(pacing, now, 1, 100, 3_000);
    now = round(pacing, now, 40, 5, 4_000);
    expect(pacing.intervalMs).toBe(400);
  });

  it('falls back to the base at the first commit after a pause longer than its ceiling, and says so', () => {
    const pacing = new CheckpointPacing(options);
    let now = round(pacing, 0, 1, 100, 2_000);
    now = round(pacing, now, 1, 100, 4_000);
    expect(pacing.intervalMs).toBe(100);
    expect(pacing.commit(now + 700)).toBe(false);
    expect(pacing.intervalMs).toBe(100);
    expect(pacing.commit(now + 700 + 801)).toBe(true);
    expect(pacing.intervalMs).toBe(50);
  });

  it('learns nothing from a checkpoint that could not read the WAL, nor from one after no commit', () => {
    const pacing = new CheckpointPacing(options);
    let now = round(pacing, 0, 1, 100, 2_000);
    now = round(pacing, now, 1, 100, -1);
    expect(pacing.intervalMs).toBe(50);
    now = round(pacing, now, 1, 100, 4_000);
    expect(pacing.intervalMs).toBe(100);
    pacing.started();
    pacing.finished(9_000);
    expect(pacing.intervalMs).toBe(100);
  });

  it('after a restart of the WAL counts what it holds now (the receiver: small commits, restarts between them)', () => {
    const pacing = new CheckpointPacing(options);
    let now = round(pacing, 0, 3, 60, 1_188);
    now = round(pacing, now, 3, 60, 86);
    expect(pacing.intervalMs).toBe(50);
    now = round(pacing, now, 2, 60, 256);
    now = round(pacing, now, 2, 60, 100);
    expect(pacing.intervalMs).toBe(50);
    // A sync's page after a restart: 1,800 frames in one commit.
    round(pacing, now, 1, 100, 1_800);
    expect(pacing.intervalMs).toBe(100);
  });
});
