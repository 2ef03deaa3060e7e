import { describe, expect, it } from 'vitest';
import { expectPositive, smoke } from './smoke-harness.ts';

// Keeps the harness working in CI. It asserts that every figure is produced, never how fast anything is: timings
// belong to `npm run bench` on a quiet machine, not to a test. `--smoke` runs in two files, each within the suite's
// per-file budget and able to run beside the other: this one the replay and steady-state parts,
// test/bench/bench-parts.smoke.test.ts every other part.
describe('benchmark harness (--smoke): replay and steady', () => {
  // Generous bounds: --smoke builds dist/ and starts several servers; beside the rest of the suite it takes minutes.
  it('prints the replay and steady-state rows with positive figures for each', { timeout: 300_000 }, async () => {
    const { stdout, figures } = await smoke('replay,steady');
    for (const name of [
      'Replay into SQLite, large pages',
      'Replay into SQLite, small pages',
      'Replay into Postgres, large pages',
      'Replay into Postgres, small pages',
      'Bytes per reading, SQLite',
      'Bytes per reading, Postgres',
      'Steady state, SQLite',
      'Steady state, Postgres',
      'Replay server: its own CPU per million rows',
    ]) {
      expect(stdout).toContain(name);
    }

    const replay = figures.replay!;
    expectPositive(replay.server.perMillion, 'replay server CPU per million rows');
    for (const dialect of ['sqlite', 'postgres'] as const) {
      const d = replay.dialects[dialect]!;
      for (const shape of ['large', 'small'] as const) {
        const f = d.shapes[shape]!;
        const where = `${dialect} ${shape}`;
        expect(f.rows, where).toBe(replay.rows);
        for (const impl of ['ours', 'minimal', 'overlap', 'ceiling'] as const) {
          expectPositive(f.rowsPerSecond[impl], `${where} ${impl} rows/s`);
          expectPositive(f.cpuPerMillion[impl], `${where} ${impl} CPU per million rows`);
          expectPositive(f.maxRssBytes[impl], `${where} ${impl} peak RSS`);
        }
        expectPositive(f.ratioToBestMinimal, `${where} ours / best minimal`);
        expectPositive(f.ratioToCeiling, `${where} ours / ceiling`);
        expectPositive(f.cpuRatio, `${where} CPU ratio`);
      }
      expectPositive(d.bytes!.perReading, `${dialect} bytes per reading`);
      expect(d.bytes!.readings, dialect).toBe(replay.rows);
      if (d.bytes!.breakdown !== 'none') expect(d.bytes!.relations.length, `${dialect} bytes breakdown`).toBeGreaterThan(0);
      const steady = d.steady!;
      expect(steady.readings, `${dialect} steady readings`).toBe(150);
      for (const kind of ['ours', 'minimal', 'node'] as const) {
        expectPositive(steady.wallMs[kind], `${dialect} steady ${kind} wall`);
        expectPositive(steady.cpuMs[kind], `${dialect} steady ${kind} CPU`);
      }
      expectPositive(steady.wallRatio, `${dialect} steady wall ratio`);
      expectPositive(steady.cpuRatio, `${dialect} steady CPU ratio`);
    }
  });
});
