import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkCompleteness } from '../../src/app/completeness.ts';
import { engineSettings } from '../../src/app/engine-settings.ts';
import { FakeClock } from '../../src/clock.ts';
import { silentLogger } from '../../src/logger.ts';
import type { Store } from '../../src/store/types.ts';
import { parseDefinitions } from '../../src/sync/definitions.ts';
import { runSync, type SyncReport } from '../../src/sync/engine.ts';
import type { GraphQLRequester } from '../../src/sync/fetch.ts';
import { buildStatus, formatStatus } from '../../src/cli/status.ts';
import { readSyncHealth } from '../../src/serve/health.ts';
import { createMetrics } from '../../src/metrics.ts';
import { migratedStore } from '../support/databases.ts';
import { DAY, HOUR, MIN, syncSettings } from './helpers.ts';

/**
 * Fan-out streams in the engine (src/sync/run/partitioned.ts), against a scripted API on a real SQLite file: each
 * parent under its own state key, parents listed later read from the start of history, removed ones not read, a
 * failing parent alone failing, and the parents sharing the stream's window concurrency.
 */

const CUSTOMER = '0b5e1a8c-2f4d-4c1e-9a7b-3d6f8e2c1a90';
const NOW = Date.UTC(2026, 0, 8, 12);
const EVERY = 15 * MIN;

const DEFINITIONS = `version: 2
streams:
  - name: floor-spaces
    document: spaces.graphql
    sink: floorSpaces
    kind: full
    paging: { style: single, records: floorSpaces, maxPageSize: 1000 }
    record:
      id: { path: id, type: id }
      name: { path: name, type: string, nullable: true }
    softDelete: { completeWhenUnset: [] }
  - name: space-readings
    document: space-readings.graphql
    sink: occupancy
    kind: incremental
    partition: { parent: floor-spaces, parentKey: id, variable: spaceId }
    paging: { style: relay-nodes, connection: floorSpaceOccupancy, variables: { pageSize: first, cursor: after } }
    variables: { from: '{{window.from}}', to: '{{window.to}}' }
    record:
      floorSpaceId: { path: $partition, type: id }
      observedAt: { path: created, type: timestamp }
      occupancyStatus: { path: status, type: text }
      headcount: { path: headcount, type: count }
      eventId: { path: id, type: id, nullable: true }
    cursorField: observedAt
`;
const streams = parseDefinitions(DEFINITIONS, '/defs/streams.yaml', { readText: () => 'query Q { x }' }).streams;

/** A full fan-out: each building's floor spaces listed by a query of their own, the building's id not repeated. */
const FULL = `version: 2
streams:
  - name: buildings
    document: buildings.graphql
    sink: buildings
    kind: full
    paging: { style: single, records: buildings, maxPageSize: 1000 }
    record:
      id: { path: id, type: id }
      name: { path: name, type: string }
    softDelete: { completeWhenUnset: [] }
  - name: building-spaces
    document: building-spaces.graphql
    sink: floorSpaces
    kind: full
    partition: { parent: buildings, parentKey: id, variable: buildingId }
    paging: { style: single, records: floorSpaces, maxPageSize: 1000 }
    record:
      id: { path: id, type: id }
      buildingId: { path: $partition, type: id, nullable: true }
      name: { path: name, type: string, nullable: true }
    softDelete: { completeWhenUnset: [] }
`;
const fullStreams = parseDefinitions(FULL, '/defs/streams.yaml', { readText: () => 'query Q { x }' }).streams;

interface Request {
  spaceId: string;
  from: number;
  to: number;
  after: string | null;
}

/** One space's readings in [from, to): one every 15 minutes since two days before NOW, in (created, id) order. */
function readings(spaceId: string, from: number, to: number) {
  const out: Array<{ id: string; status: string; headcount: number; created: string }> = [];
  const first = NOW - 2 * DAY;
  for (let t = Math.max(first, Math.ceil((from - first) / EVERY) * EVERY + first); t < to; t += EVERY) {
    const n = (t / EVERY + spaceId.length) % 3;
    out.push({ id: `${spaceId}:${t}`, status: n === 0 ? 'Unoccupied' : 'CurrentlyOccupied', headcount: n, created: new Date(t).toISOString() });
  }
  return out;
}

/** The scripted platform: a floor space listing and each space's readings, Relay-paged; it records every request. */
class Api implements GraphQLRequester {
  spaces = new Set<string>();
  broken = new Set<string>();
  /** Each building's floor spaces (the full fan-out's children). */
  buildings = new Map<string, string[]>();
  requests: Request[] = [];
  inFlight = 0;
  maxInFlight = 0;

  async request<T>(_document: unknown, variables: Record<string, unknown> = {}): Promise<T> {
    this.inFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      // A few turns of the event loop, as an answer over a network takes: other requests may start meanwhile.
      for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
      if ('buildingId' in variables) {
        const buildingId = String(variables.buildingId);
        this.requests.push({ spaceId: buildingId, from: 0, to: 0, after: null });
        if (this.broken.has(buildingId)) return { floorSpaces: null } as T;
        return { floorSpaces: (this.buildings.get(buildingId) ?? []).map((id) => ({ id, name: `Space ${id}` })) } as T;
      }
      if (!('spaceId' in variables)) {
        return { floorSpaces: [...this.spaces].map((id) => ({ id, name: `Space ${id}` })), buildings: [...this.buildings.keys()].map((id) => ({ id, name: `Building ${id}` })) } as T;
      }
      const spaceId = String(variables.spaceId);
      const from = Date.parse(String(variables.from));
      const to = Date.parse(String(variables.to));
      const after = (variables.after as string | null | undefined) ?? null;
      this.requests.push({ spaceId, from, to, after });
      if (this.broken.has(spaceId)) return { floorSpaceOccupancy: { nodes: null, pageInfo: null } } as T;
      const all = readings(spaceId, from, to);
      const start = after === null ? 0 : Number(after);
      const first = Number(variables.first);
      const nodes = all.slice(start, start + first);
      const end = start + nodes.length;
      return { floorSpaceOccupancy: { nodes, pageInfo: { hasNextPage: end < all.length, endCursor: String(end) } } } as T;
    } finally {
      this.inFlight -= 1;
    }
  }
}

let store: Store;
let drop: () => Promise<void>;
let clock: FakeClock;
let api: Api;

beforeEach(async () => {
  const db = await migratedStore('sqlite', 'partitioned');
  store = db.store;
  drop = db.drop;
  clock = new FakeClock(NOW);
  api = new Api();
});
afterEach(async () => {
  await drop();
});

function sync(overrides: Parameters<typeof syncSettings>[0] = {}, inForce = streams): Promise<SyncReport> {
  return runSync({
    store,
    clock,
    logger: silentLogger,
    settings: engineSettings({ sync: syncSettings({ initialHistoryMs: DAY, stepMs: 6 * HOUR, pageSize: 20, ...overrides }) }),
    streams: inForce,
    targets: [{ customerId: CUSTOMER, client: api }],
    loadDocument: (path) => path,
  });
}

async function storedBySpace(): Promise<Map<string, string[]>> {
  const rows = await store.query<{ floor_space_id: string; observed_at: unknown }>(
    'SELECT floor_space_id, observed_at FROM occupancy WHERE customer_id = $1 ORDER BY floor_space_id, observed_at',
    [CUSTOMER],
  );
  const out = new Map<string, string[]>();
  for (const r of rows) {
    const list = out.get(r.floor_space_id) ?? [];
    list.push(new Date(r.observed_at as string).toISOString());
    out.set(r.floor_space_id, list);
  }
  return out;
}

/** What a space's stored readings must be after runs whose first read from `since`, up to `until`. */
const truth = (spaceId: string, since: number, until: number) => readings(spaceId, since, until).map((r) => r.created);

async function stateKeys(): Promise<Map<string, string | null>> {
  return new Map((await store.listStates(CUSTOMER)).map((s) => [s.stateKey, s.watermark]));
}

describe('fan-out streams', () => {
  it('reads each parent under its own state key and stores exactly its readings', async () => {
    api.spaces = new Set(['a', 'b', 'c']);
    const report = await sync();
    const outcome = report.outcomes.find((o) => o.stream === 'space-readings')!;
    expect(outcome).toMatchObject({ status: 'succeeded', stateKey: 'space-readings', note: '3 of 3 parent(s) read' });
    const stored = await storedBySpace();
    const limit = NOW - MIN;
    for (const s of ['a', 'b', 'c']) expect(stored.get(s)).toEqual(truth(s, NOW - DAY, limit));
    expect(outcome.records).toBe(3 * truth('a', NOW - DAY, limit).length);
    const keys = await stateKeys();
    for (const s of ['a', 'b', 'c']) expect(keys.get(`space-readings/${s}`)).toBe(new Date(limit).toISOString());
    // One run of the stream, its counts the parents' summed.
    const runs = await store.query<{ stream: string; records: unknown }>("SELECT stream, records FROM sync_runs WHERE stream LIKE 'space-readings%'");
    expect(runs.map((r) => [r.stream, Number(r.records)])).toEqual([['space-readings', outcome.records]]);
    // The completeness alarm reads the stream's window before its lowest partition's watermark.
    const [finding] = await checkCompleteness(store, streams, { minShare: 0.5, windowMs: HOUR });
    expect(finding).toMatchObject({ stream: 'space-readings', window: { to: new Date(limit).toISOString() }, current: 3 * 4 });
  });

  it('reads a parent listed later from the start of history, and no longer reads a removed one (its state stays)', async () => {
    api.spaces = new Set(['a', 'b']);
    await sync();
    const before = await stateKeys();
    clock.advance(HOUR);
    api.spaces = new Set(['a', 'd']);
    api.requests = [];
    const report = await sync();
    expect(report.outcomes.every((o) => o.status === 'succeeded')).toBe(true);
    expect(api.requests.some((r) => r.spaceId === 'b')).toBe(false);
    const firstOfD = api.requests.filter((r) => r.spaceId === 'd').sort((x, y) => x.from - y.from)[0]!;
    expect(firstOfD.from).toBe(NOW + HOUR - DAY);
    // a goes on from its own watermark (minus the lookback), not from the start of history.
    expect(Math.min(...api.requests.filter((r) => r.spaceId === 'a').map((r) => r.from))).toBe(NOW - MIN - 15 * MIN);
    const stored = await storedBySpace();
    expect(stored.get('d')).toEqual(truth('d', NOW + HOUR - DAY, NOW + HOUR - MIN));
    expect(stored.get('a')).toEqual(truth('a', NOW - DAY, NOW + HOUR - MIN));
    const after = await stateKeys();
    expect(after.get('space-readings/b')).toBe(before.get('space-readings/b'));
    const [b] = await store.query<{ deleted_at: unknown }>("SELECT deleted_at FROM floor_spaces WHERE floor_space_id = 'b'");
    expect(b!.deleted_at).not.toBeNull();

    // status: one row for the stream, its watermark the lowest of the parents still listed (b's old one is not).
    const parents = new Map([[`${CUSTOMER}\u0000space-readings`, new Set(await store.listedValues('floorSpaces', 'id', CUSTOMER))]]);
    const status = buildStatus(await store.listStates(CUSTOMER), await store.lastRuns(CUSTOMER), clock.now(), parents);
    expect(status.map((e) => e.stream)).toEqual(['floor-spaces', 'space-readings']);
    expect(status[1]).toMatchObject({ watermark: after.get('space-readings/a'), partitions: { inForce: 2, removed: 1, inFlight: 0 } });
    expect(after.get('space-readings/b')! < after.get('space-readings/a')!).toBe(true);
    expect(formatStatus(status)).toMatch(/space-readings .* succeeded \[2 partition\(s\), 1 of parents no longer listed\]/);
    // /healthz judges the stream by its run: a removed parent's partition, for ever behind, is no lag of the stream.
    expect((await readSyncHealth(store)).map((r) => r.stream)).toEqual(['floor-spaces', 'space-readings']);
    // Nor is it a lag series of its own: the metric reads the whole view, and leaves the partitions out.
    const metrics = createMetrics({ processMetrics: false });
    metrics.observeSyncHealth(await store.query('SELECT * FROM sync_health'));
    const text = await metrics.text();
    expect(text).toMatch(/occupancy_sync_lag_seconds\{[^}]*stream="floor-spaces"/);
    expect(text).not.toMatch(/stream="space-readings\//);
  });

  it("fails a parent whose answers break the contract alone: the others' readings are all stored", async () => {
    api.spaces = new Set(['a', 'b', 'c', 'd', 'e']);
    api.broken = new Set(['c']);
    const report = await sync({ windowConcurrency: 2 });
    const outcome = report.outcomes.find((o) => o.stream === 'space-readings')!;
    expect(outcome.status).toBe('failed');
    expect(outcome.note).toMatch(/^5 of 5 parent\(s\) read, 1 failed \(spaceId c\)/);
    expect(String((outcome.error as Error).message)).toMatch(/spaceId c, window/);
    const stored = await storedBySpace();
    for (const s of ['a', 'b', 'd', 'e']) expect(stored.get(s)).toEqual(truth(s, NOW - DAY, NOW - MIN));
    expect(stored.has('c')).toBe(false);
    api.broken.clear();
    const again = await sync({ windowConcurrency: 2 });
    expect(again.outcomes.every((o) => o.status === 'succeeded')).toBe(true);
    expect((await storedBySpace()).get('c')).toEqual(truth('c', NOW - DAY, NOW - MIN));
  });

  it("shares the stream's window concurrency among its parents", async () => {
    api.spaces = new Set(Array.from({ length: 12 }, (_, i) => `s${String(i).padStart(2, '0')}`));
    await sync({ windowConcurrency: 3 });
    expect(api.maxInFlight).toBeLessThanOrEqual(3);
    expect(api.maxInFlight).toBeGreaterThan(1);
    const stored = await storedBySpace();
    for (const s of api.spaces) expect(stored.get(s)).toEqual(truth(s, NOW - DAY, NOW - MIN));
  });

  it('stops after three parents when every request fails before anything commits, not once per parent', async () => {
    api.spaces = new Set(Array.from({ length: 10 }, (_, i) => `s${i}`));
    api.broken = new Set(api.spaces);
    const report = await sync({ windowConcurrency: 4 });
    const outcome = report.outcomes.find((o) => o.stream === 'space-readings')!;
    expect(outcome.status).toBe('failed');
    expect(api.requests).toHaveLength(3);
    expect(outcome.note).toMatch(/3 of 10 parent\(s\) read, 3 failed .*; the other 7 wait for the next run/);
  });

  it('says so when the parent stream has listed nothing', async () => {
    const report = await sync();
    expect(report.outcomes.find((o) => o.stream === 'space-readings')).toMatchObject({ status: 'succeeded', note: 'no parents: stream floor-spaces has listed none' });
  });

  it("lists each parent's children in a full fan-out, and soft-deletes only after every parent's listing was complete", async () => {
    const spaces = async () =>
      (await store.query<{ floor_space_id: string; building_id: string; deleted_at: unknown }>('SELECT floor_space_id, building_id, deleted_at FROM floor_spaces ORDER BY floor_space_id')).map(
        (r) => [r.floor_space_id, r.building_id, r.deleted_at === null ? 'listed' : 'deleted'],
      );
    api.buildings = new Map([['X', ['x1', 'x2']], ['Y', ['y1']]]);
    const first = await sync({ windowConcurrency: 2 }, fullStreams);
    expect(first.outcomes.map((o) => [o.stream, o.status, o.records])).toEqual([['buildings', 'succeeded', 2], ['building-spaces', 'succeeded', 3]]);
    expect(await spaces()).toEqual([['x1', 'X', 'listed'], ['x2', 'X', 'listed'], ['y1', 'Y', 'listed']]);
    expect([...(await stateKeys()).keys()].sort()).toEqual(['building-spaces/X', 'building-spaces/Y', 'buildings']);

    // Y leaves the building listing, x2 leaves X's: both listings complete, so y1 and x2 go.
    clock.advance(HOUR);
    api.buildings = new Map([['X', ['x1']]]);
    api.requests = [];
    await sync({ windowConcurrency: 2 }, fullStreams);
    expect(api.requests.map((r) => r.spaceId)).toEqual(['X']);
    expect(await spaces()).toEqual([['x1', 'X', 'listed'], ['x2', 'X', 'deleted'], ['y1', 'Y', 'deleted']]);

    // X's listing fails: nothing is soft-deleted on a run that did not read every parent's children.
    clock.advance(HOUR);
    api.buildings = new Map([['X', []], ['Z', ['z1']]]);
    api.broken = new Set(['X']);
    const failed = await sync({ windowConcurrency: 2 }, fullStreams);
    expect(failed.outcomes.find((o) => o.stream === 'building-spaces')).toMatchObject({ status: 'failed', note: expect.stringMatching(/2 of 2 parent\(s\) read, 1 failed \(buildingId X\)/) });
    expect(await spaces()).toEqual([['x1', 'X', 'listed'], ['x2', 'X', 'deleted'], ['y1', 'Y', 'deleted'], ['z1', 'Z', 'listed']]);
  });
});
