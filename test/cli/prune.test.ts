import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.ts';
import type { OccupancyRecord, Store } from '../../src/store/index.ts';
import { runMain } from '../support/cli.ts';
import { DIALECTS, freshDatabase, openTestStore, type TestDatabase } from '../support/databases.ts';
import { checkpoint } from '../store/harness.ts';

/**
 * `occupancy-sync prune`: the daemons' retention pass, once, for cron and systemd timers (src/cli/commands/prune.ts,
 * src/app/retention.ts). What it deletes is checked against the rows as stored and the cutoff it reports.
 */

const DAY = 86_400_000;
const C = 'cust-prune';
const CHECKPOINT = checkpoint(C, null);

describe.each(DIALECTS)('prune on %s', (dialect) => {
  let db: TestDatabase;
  let store: Store;
  let env: Record<string, string>;
  beforeEach(async () => {
    db = await freshDatabase(dialect, 'prune', { migrate: true });
    store = await openTestStore(db);
    env = { DATABASE_URL: db.url, LOG_LEVEL: 'silent' };
  });
  afterEach(async () => {
    await store.close();
    await db.drop();
  });

  /** Three floor spaces every 6 hours from 100 days ago to yesterday, committed as poll pages. */
  async function loadReadings(): Promise<OccupancyRecord[]> {
    const out: OccupancyRecord[] = [];
    const from = Math.floor((Date.now() - 100 * DAY) / 3_600_000) * 3_600_000;
    for (let t = from; t < Date.now() - DAY; t += 6 * 3_600_000) {
      for (let s = 0; s < 3; s++) out.push({ floorSpaceId: `fs-${s}`, observedAt: new Date(t).toISOString(), occupancyStatus: 'CurrentlyOccupied', headcount: s, eventId: null });
    }
    for (let i = 0; i < out.length; i += 500) await store.commitPage({ customerId: C, sink: 'occupancy', at: new Date().toISOString(), checkpoint: CHECKPOINT, records: out.slice(i, i + 500) });
    return out;
  }

  /** Runs of one stream 40 and 1 days ago, and the only run of another stream 40 days ago (its latest: it stays). */
  async function loadRuns(): Promise<{ old: number; recent: number; lone: number }> {
    const run = async (stateKey: string, daysAgo: number) => {
      const started = Date.now() - daysAgo * DAY;
      const id = await store.startRun({ customerId: C, stateKey, mode: 'incremental', startedAt: new Date(started).toISOString() });
      await store.finishRun(id, { status: 'succeeded', finishedAt: new Date(started + 1000).toISOString() });
      return id;
    };
    return { old: await run('occupancy', 40), recent: await run('occupancy', 1), lone: await run('buildings', 40) };
  }

  const observed = async () => (await store.query<{ t: string }>('SELECT observed_at AS t FROM occupancy ORDER BY observed_at, floor_space_id')).map((r) => r.t);

  it('deletes the runs and readings the retention settings let go, once, and says what went', async () => {
    const readings = await loadReadings();
    const runs = await loadRuns();
    const done = await runMain(['prune', '--json'], { ...env, READINGS_RETENTION: '60d' });
    expect(done.code, done.stderr).toBe(ExitCode.OK);
    const pruned = JSON.parse(done.stdout) as { runs: { deleted: number; before: string }; readings: { partitions: string[]; rows: number; before: string } };
    // RUN_HISTORY_RETENTION's default, 28 days: the old run of a stream with a later one goes, a stream's latest stays.
    expect(pruned.runs.deleted).toBe(1);
    const left = (await store.query<{ id: number | string }>('SELECT id FROM sync_runs ORDER BY id')).map((r) => Number(r.id));
    expect(left).toEqual([runs.recent, runs.lone]);
    expect(Date.parse(pruned.readings.before)).toBeGreaterThan(Date.now() - 60 * DAY - 60_000);
    const kept = readings.map((r) => r.observedAt).filter((t) => t >= pruned.readings.before).sort();
    expect(kept.length).toBeLessThan(readings.length);
    expect(await observed()).toEqual(kept);
    if (dialect === 'postgres') {
      // Every month wholly before the cutoff went as a partition: none of its rows was deleted one by one.
      expect(pruned.readings.partitions.length).toBeGreaterThan(0);
      const wholeMonths = readings.filter((r) => r.observedAt < pruned.readings.before.slice(0, 7)).length;
      expect(pruned.readings.rows).toBe(readings.length - kept.length - wholeMonths);
    } else {
      expect(pruned.readings).toMatchObject({ partitions: [], rows: readings.length - kept.length });
    }

    // A late reading of the pruned past, stored again, goes at the next pass: said in words, with the rebuild that
    // would take its hours out of the aggregates too.
    const late = readings[0]!;
    await store.commitPage({ customerId: C, sink: 'occupancy', at: new Date().toISOString(), checkpoint: CHECKPOINT, records: [late] });
    const words = await runMain(['prune'], { ...env, READINGS_RETENTION: '60d' });
    expect(words.code, words.stderr).toBe(ExitCode.OK);
    const cutoff = /observed before (\S+) \(READINGS_RETENTION\)/.exec(words.stdout)?.[1] ?? '';
    // Postgres stores it in its month made again, or in the default partition: it goes whole or row-wise.
    expect(words.stdout).toMatch(/^Readings: (dropped \d+ partition\(s\) \(occupancy_readings_.*\) and )?deleted [01] reading\(s\) observed before /m);
    if (dialect === 'sqlite') expect(words.stdout).toContain('Readings: deleted 1 reading(s)');
    // The first local date that starts after the cutoff in every zone (UTC+14 included).
    expect(words.stdout).toContain(`occupancy-sync aggregates rebuild --to ${new Date(Date.parse(cutoff) + 38 * 3_600_000).toISOString().slice(0, 10)}\` removes them too`);
    expect(await observed()).toEqual(kept);

    // Again: nothing left to delete, said in words.
    const again = await runMain(['prune'], { ...env, READINGS_RETENTION: '60d' });
    expect(again.code, again.stderr).toBe(ExitCode.OK);
    expect(again.stdout).toMatch(/^Runs: deleted 0 that finished before \S+ \(RUN_HISTORY_RETENTION\)\.\nReadings: deleted 0 reading\(s\) observed before \S+ \(READINGS_RETENTION\)\.\n$/);
    expect(await observed()).toEqual(kept);
  }, 60_000);

  it('keeps every reading by default and every run with RUN_HISTORY_RETENTION=off; a signal stops it with exit 0; a bad duration is exit 78 naming it', async () => {
    const readings = await loadReadings();
    await loadRuns();
    const kept = await runMain(['prune'], { ...env, RUN_HISTORY_RETENTION: 'off' });
    expect(kept.code, kept.stderr).toBe(ExitCode.OK);
    expect(kept.stdout).toBe('Runs: all kept (RUN_HISTORY_RETENTION is off).\nReadings: all kept (READINGS_RETENTION is off, the default).\n');
    expect((await observed()).length).toBe(readings.length);
    expect((await store.query('SELECT id FROM sync_runs')).length).toBe(3);

    // A signal (SIGTERM, SIGINT) stops the pass between two batches, here before the readings: exit 0, nothing lost
    // or half done, and it says so; the next pass deletes them.
    const signal = AbortSignal.abort(new Error('received SIGTERM'));
    const stopped = await runMain(['prune'], { ...env, READINGS_RETENTION: '60d' }, signal);
    expect(stopped.code, stopped.stderr).toBe(ExitCode.OK);
    expect(stopped.stdout).toMatch(/^Readings: none deleted \(stopped before them\)\.\nStopped by a signal: what went stays gone, the next pass deletes the rest\.\n$/m);
    expect((await observed()).length).toBe(readings.length);
    expect(JSON.parse((await runMain(['prune', '--json'], { ...env, READINGS_RETENTION: '60d' })).stdout)).toMatchObject({ stopped: false, readings: { before: expect.any(String) } });
    const left = (await observed()).length;
    expect(left).toBeLessThan(readings.length);

    const bad = await runMain(['prune'], { ...env, READINGS_RETENTION: '90 days' });
    expect(bad.code).toBe(ExitCode.CONFIG);
    expect(bad.stderr).toContain('READINGS_RETENTION="90 days": must be a duration from 1h to 36500d (a hundred years), or off. Fix: use e.g. 90d or 400d');
    expect((await observed()).length).toBe(left);
  }, 60_000);
});
