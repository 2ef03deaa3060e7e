import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { postgresCpuSeconds } from '../../bench/server-cpu.ts';
import { PG_BASE_URL } from '../support/databases.ts';

// bench/server-cpu.ts is the server's share of the replay's cost (bench/replay-aggregates.ts): it must count a
// backend's work both while the backend lives and once the postmaster has reaped it, or a run's figure would depend
// on when its connections happened to close. Other work on the server only adds to the delta, so the bound is a floor.
describe('the local Postgres server CPU a benchmark reads', () => {
  it("counts a backend's CPU while it lives and after its connection ended", async () => {
    const before = postgresCpuSeconds();
    expect(before, 'no postgres process in /proc: the suite expects the local server').toBeDefined();
    const sql = postgres(PG_BASE_URL, { max: 1, onnotice: () => {} });
    let alive: number | undefined;
    try {
      // A few hundred milliseconds of server CPU, whatever the machine: a sum over a generated series.
      await sql`SELECT sum(x) FROM generate_series(1, 3000000) AS x`;
      alive = postgresCpuSeconds();
    } finally {
      await sql.end();
    }
    expect(alive! - before!).toBeGreaterThanOrEqual(0.1);
    // Once the backend has ended, its CPU is its reaper's: the total must not drop back.
    let after = postgresCpuSeconds()!;
    for (let i = 0; i < 50 && after < alive!; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      after = postgresCpuSeconds()!;
    }
    expect(after).toBeGreaterThanOrEqual(alive!);
  });
});
