import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { runMain } from '../support/cli.ts';
import { DIALECTS, freshDatabase, openTestStore, type TestDatabase } from '../support/databases.ts';
import { ROOT } from '../support/process.ts';
import { tempDir } from '../support/tmp.ts';
import { HOUR, childEnv } from '../sync/helpers.ts';

/**
 * The trial of issue 38: a platform whose status is a String spelled Occupied/Available (the sandbox's change
 * variant), synced with no value map. The readings are stored as spelled, which no report counts; `sync` says how
 * many in its summary (line and --json) with the map to add, and `status` shows what is stored, until a map and a
 * rewind store them again in the canonical spelling.
 */
describe.each(DIALECTS)('readings stored with an unmapped status (%s)', (dialect) => {
  let sandbox: Sandbox | undefined;
  let db: TestDatabase | undefined;
  let dir: { dir: string; remove(): void } | undefined;
  afterEach(async () => {
    await sandbox?.close();
    await db?.drop();
    dir?.remove();
  });

  it('sync counts them in its summary and --json, status shows them per status; a map and a rewind put them right', async () => {
    const dataStart = Math.floor((Date.now() - 8 * HOUR) / 300_000) * 300_000;
    sandbox = await startSandbox({ apiVariant: 'change', seed: 11, customers: 1, dataStart, lateArrivalMaxMs: 0 });
    db = await freshDatabase(dialect, 'unmapped-status');
    dir = tempDir('unmapped-');
    cpSync(join(ROOT, 'docs/examples/api-change'), dir.dir, { recursive: true });
    const file = join(dir.dir, 'occupancy-sync.streams.yaml');
    const mapped = readFileSync(file, 'utf8');
    const MAP = /\n {8}map: \{ Occupied: CurrentlyOccupied, Available: Unoccupied \}/;
    expect(mapped).toMatch(MAP);
    writeFileSync(file, mapped.replace(MAP, ''));
    const env = childEnv(sandbox, db.url, { LOG_LEVEL: 'silent', SYNC_INITIAL_HISTORY: '6h', SYNC_SETTLE_DELAY: '1s', DEFINITIONS_FILE: dir.dir });
    const customer = sandbox.customers[0]!.id;

    const sync = await runMain(['sync'], env);
    expect(sync.code).toBe(ExitCode.OK);
    const store = await openTestStore(db);
    let stored: Array<{ s: string; n: number }>;
    try {
      stored = (await store.query<{ s: string; n: unknown }>('SELECT occupancy_status AS s, count(*) AS n FROM occupancy WHERE customer_id = $1 GROUP BY occupancy_status ORDER BY 2 DESC, 1', [customer])).map((r) => ({ s: r.s, n: Number(r.n) }));
    } finally {
      await store.close();
    }
    // Stored as the API spelled them: nothing a report counts.
    expect(stored.map((r) => r.s).sort()).toEqual(['Available', 'Occupied']);
    const total = stored.reduce((n, r) => n + r.n, 0);
    expect(total).toBeGreaterThan(50);
    const records = Number(/(\d[\d,]*) records/.exec(sync.stdout)![1]!.replace(/,/g, ''));
    expect(sync.stdout).toMatch(new RegExp(`^sync: 1 customer, 2 streams, \\d+ pages, ${records.toLocaleString('en-US')} records, ${total.toLocaleString('en-US')} with an unmapped status, 0 failed in `));
    const line = sync.stderr.split('\n').find((l) => l.includes(' occupancy: '))!;
    expect(line).toMatch(
      new RegExp(
        `^  ${customer} occupancy: ${total.toLocaleString('en-US')} reading\\(s\\) stored with a status that is neither CurrentlyOccupied nor Unoccupied \\((Occupied|Available), (Occupied|Available)\\): the reports count them neither occupied nor vacant\\. Fix: map them in stream occupancy's occupancyStatus \\(map: \\{ [^}]+ \\}; \`(npx )?occupancy-sync check\` names the values\\), then \`(npx )?occupancy-sync state rewind --stream occupancy --to <the first such reading> --yes\` to store them again$`,
      ),
    );
    expect(line).toContain('Occupied: CurrentlyOccupied');
    expect(line).toContain('Available: Unoccupied');

    // status: per status, the counts stored; in --json on the readings stream.
    const status = await runMain(['status'], env);
    expect(status.code).toBe(ExitCode.OK);
    const counts = stored.map((r) => `${r.n.toLocaleString('en-US')} ${r.s}`).join(', ');
    expect(status.stdout).toContain(`\nReadings stored with an unmapped status (the reports count them neither occupied nor vacant):\n  ${customer}: ${counts}. Fix: map them to CurrentlyOccupied or Unoccupied`);
    const entries = JSON.parse((await runMain(['status', '--json'], env)).stdout) as Array<{ stream: string; unmapped?: Array<{ status: string; readings: number }> }>;
    expect(entries.find((e) => e.stream === 'occupancy')!.unmapped).toEqual(stored.map((r) => ({ status: r.s, readings: r.n })));
    expect(entries.find((e) => e.stream === 'buildings')!.unmapped).toBeUndefined();

    // A second run (the lookback re-reads the last readings): --json counts what it stored, the outcome names the values.
    const json = JSON.parse((await runMain(['sync', '--json'], env)).stdout) as { unmapped: number; records: number; outcomes: Array<{ stream: string; records: number; unmapped: number; unmappedStatuses?: string[] }> };
    const occupancy = json.outcomes.find((o) => o.stream === 'occupancy')!;
    expect(json.unmapped).toBe(occupancy.unmapped);
    expect(occupancy.unmapped).toBe(occupancy.records);
    if (occupancy.unmapped > 0) expect(occupancy.unmappedStatuses!.every((s) => s === 'Occupied' || s === 'Available')).toBe(true);
    expect(json.outcomes.find((o) => o.stream === 'buildings')!.unmapped).toBe(0);

    // The fix the line names: the map, a rewind, a sync. Every reading is stored again, canonically.
    writeFileSync(file, mapped);
    const rewind = await runMain(['state', 'rewind', '--stream', 'occupancy', '--to', new Date(dataStart).toISOString(), '--yes'], env);
    expect(rewind.code).toBe(ExitCode.OK);
    const again = await runMain(['sync'], env);
    expect(again.code).toBe(ExitCode.OK);
    expect(again.stdout).not.toContain('unmapped');
    expect(again.stderr).toBe('');
    const after = await runMain(['status'], env);
    expect(after.stdout).not.toContain('unmapped status');
    const check = await openTestStore(db);
    try {
      const rows = await check.query<{ s: string }>('SELECT DISTINCT occupancy_status AS s FROM occupancy WHERE customer_id = $1 ORDER BY 1', [customer]);
      expect(rows.map((r) => r.s)).toEqual(['CurrentlyOccupied', 'Unoccupied']);
    } finally {
      await check.close();
    }
  });
});
