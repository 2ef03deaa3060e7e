import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { startSandbox, type GroundTruthObservation, type Sandbox } from '../../src/sandbox/index.ts';
import { authenticate, gql, OCCUPANCY_QUERY, pageAll, type Node } from './helpers.ts';

const open: Sandbox[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});
async function sandbox(options: Parameters<typeof startSandbox>[0]) {
  const s = await startSandbox(options);
  open.push(s);
  return s;
}
const iso = (ms: number) => new Date(ms).toISOString();
const asNode = (o: GroundTruthObservation): Node => ({
  id: o.id,
  floorSpaceId: o.floorSpaceId,
  occupancyStatus: o.occupancyStatus,
  headcount: o.headcount,
  created: o.created,
});
const MIN = 60_000;

describe('sandbox occupancy paging', () => {
  it('returns each observation exactly once, ordered by (created, id), equal to the ground truth', async () => {
    const clock = new FakeClock('2026-01-08T12:34:56.789Z');
    const s = await sandbox({ clock, seed: 11 });
    const c = s.customers[0]!;
    const token = await authenticate(s.url, c.readKey);
    const from = '2026-01-07T12:00:00.000Z';
    const to = '2026-01-08T12:34:56.789Z';
    // 50 does not divide the 12 floor spaces of a tick, so pages end in the middle of ties on created.
    const { nodes, pages } = await pageAll(s.url, token, from, to, 50);
    const truth = [...s.truth.observations(c.id, { from, to })].map(asNode);
    expect(nodes.length).toBeGreaterThan(12 * 280);
    expect(pages).toBe(Math.ceil(nodes.length / 50));
    expect(new Set(nodes.map((n) => n.id)).size).toBe(nodes.length);
    for (let i = 1; i < nodes.length; i++) {
      const [a, b] = [nodes[i - 1]!, nodes[i]!];
      expect(a.created < b.created || (a.created === b.created && a.id < b.id)).toBe(true);
    }
    expect(nodes).toEqual(truth);
    expect(nodes.every((n) => (n.occupancyStatus === 'Unoccupied') === (n.headcount === 0))).toBe(true);
    expect(new Set(nodes.map((n) => n.occupancyStatus))).toEqual(new Set(['CurrentlyOccupied', 'Unoccupied']));
  });

  it('treats from as inclusive and to as exclusive, with millisecond precision', async () => {
    const clock = new FakeClock('2026-01-08T00:00:00Z');
    const s = await sandbox({ clock, lateArrivalMaxMs: 0 });
    const token = await authenticate(s.url, s.customers[0]!.readKey);
    const tick = '2026-01-07T10:00:00.000Z';
    const at = await pageAll(s.url, token, tick, '2026-01-07T10:00:00.001Z', 100);
    expect(at.nodes).toHaveLength(12);
    expect(at.nodes.every((n) => n.created === tick)).toBe(true);
    expect((await pageAll(s.url, token, '2026-01-07T09:55:00.001Z', tick, 100)).nodes).toHaveLength(0);
  });

  it('hides a tick until created + its late-arrival delay, also when a later tick is already visible', async () => {
    const clock = new FakeClock('2026-01-08T00:00:00Z');
    const s = await sandbox({ clock, seed: 5, intervalMs: 5 * MIN, lateArrivalMaxMs: 15 * MIN });
    const c = s.customers[0]!;
    const token = await authenticate(s.url, c.readKey);
    const all = [...s.truth.observations(c.id, { from: '2026-01-07T00:00:00Z', visibleAt: '2026-01-09T00:00:00Z' })];
    const ticks = [...new Map(all.map((o) => [o.created, Date.parse(o.visibleAt)])).entries()].map(([created, visibleAt]) => ({
      created: Date.parse(created),
      visibleAt,
    }));
    // A tick that becomes visible after its successor: the late data a high-water mark would skip.
    const i = ticks.findIndex((t, j) => j + 1 < ticks.length && t.visibleAt > ticks[j + 1]!.visibleAt);
    expect(i).toBeGreaterThanOrEqual(0);
    const [late, next] = [ticks[i]!, ticks[i + 1]!];
    const window = [iso(late.created - 30 * MIN), iso(next.created + 1)] as const;

    clock.set(next.visibleAt);
    const before = await pageAll(s.url, token, window[0], window[1], 1000);
    const createdSeen = new Set(before.nodes.map((n) => n.created));
    expect(createdSeen.has(iso(next.created))).toBe(true);
    expect(createdSeen.has(iso(late.created))).toBe(false);
    expect(before.nodes).toEqual([...s.truth.observations(c.id, { from: window[0], to: window[1] })].map(asNode));

    clock.set(late.visibleAt);
    const after = await pageAll(s.url, token, window[0], window[1], 1000);
    expect(after.nodes.filter((n) => n.created === iso(late.created))).toHaveLength(12);
    expect(after.nodes).toEqual([...s.truth.observations(c.id, { from: window[0], to: window[1] })].map(asNode));
    expect([...s.truth.observations(c.id, { from: window[0], to: window[1], visibleAt: next.visibleAt })].map(asNode)).toEqual(before.nodes);
  });

  it('generates the same ids and values for the same seed, and different ones for another seed', async () => {
    const clock = new FakeClock('2026-01-08T00:00:00Z');
    const [a, b, other] = await Promise.all([sandbox({ clock, seed: 9 }), sandbox({ clock, seed: 9 }), sandbox({ clock, seed: 10 })]);
    const take = (s: Sandbox) => [...s.truth.observations(s.customers[1]!.id, { from: '2026-01-07T00:00:00Z', to: '2026-01-07T01:00:00Z' })];
    expect(a.customers).toEqual(b.customers);
    expect(take(a)).toEqual(take(b));
    expect(take(a)[0]!.id).not.toBe(take(other)[0]!.id);
  });

  it('removeBuilding hides the building and stops its observations from then on; history stays; restore brings it back', async () => {
    const clock = new FakeClock('2026-01-08T00:00:00Z');
    const s = await sandbox({ clock, lateArrivalMaxMs: 0, expiresIn: 86_400 });
    const c = s.customers[0]!;
    const token = await authenticate(s.url, c.readKey);
    const removed = s.truth.buildings(c.id)[0]!;
    const removedFloors = new Set(s.truth.floorSpaces(c.id).filter((f) => f.buildingId === removed.id).map((f) => f.id));
    s.removeBuilding(c.id, removed.id);
    const list = await gql(s.url, token, { query: '{ buildings { id } }' });
    expect(list.json.data.buildings.map((b: { id: string }) => b.id)).not.toContain(removed.id);
    expect(s.truth.floorSpaces(c.id).some((f) => removedFloors.has(f.id))).toBe(false);
    clock.advance(60 * MIN);
    const nodes = (await pageAll(s.url, token, '2026-01-07T23:00:00Z', iso(clock.now() + 1), 1000)).nodes;
    const ofRemoved = nodes.filter((n) => removedFloors.has(n.floorSpaceId));
    expect(ofRemoved.length).toBe(4 * 12);
    expect(ofRemoved.every((n) => n.created < '2026-01-08T00:00:00.000Z')).toBe(true);
    expect(nodes).toEqual([...s.truth.observations(c.id, { from: '2026-01-07T23:00:00Z' })].map(asNode));
    s.restoreBuilding(c.id, removed.id);
    expect(s.truth.buildings(c.id).map((b) => b.id)).toContain(removed.id);
    clock.advance(5 * MIN);
    const latest = await pageAll(s.url, token, iso(clock.now()), iso(clock.now() + 1), 100);
    expect(latest.nodes.filter((n) => removedFloors.has(n.floorSpaceId))).toHaveLength(4);
  });

  it('pages deep into a 1,000,000-observation dataset by cursor, without generating what lies before it', async () => {
    const start = Date.parse('2026-01-01T00:00:00Z');
    const interval = 5 * MIN;
    // 1000 floor spaces x 1000 ticks, all visible: exactly one million observations.
    const clock = new FakeClock(start + 1000 * interval - 1);
    const s = await sandbox({ clock, customers: 1, buildingsPerCustomer: 50, floorSpacesPerBuilding: 20, dataStart: start, intervalMs: interval, lateArrivalMaxMs: 0 });
    const c = s.customers[0]!;
    const token = await authenticate(s.url, c.readKey);
    const whole = { from: iso(start), to: iso(clock.now() + 1) };
    const page = async (variables: Record<string, unknown>) => {
      const res = await gql(s.url, token, { query: OCCUPANCY_QUERY, operationName: 'Occupancy', variables }, { 'Accept-Encoding': 'gzip' });
      expect(res.json.errors).toBeUndefined();
      return res.json.data.occupancy as { nodes: Node[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } };
    };
    // A real cursor pointing at row 700,123: the 124th row of tick 700.
    const tick700 = iso(start + 700 * interval);
    const head = await page({ from: tick700, to: whole.to, first: 124 });
    const deep = await page({ ...whole, first: 5000, after: head.pageInfo.endCursor });
    const expected = [...takeFrom(s.truth.observations(c.id, { from: tick700 }), 124, 5000)].map(asNode);
    expect(deep.nodes).toEqual(expected);
    expect(deep.pageInfo.hasNextPage).toBe(true);

    const lastTick = await page({ from: iso(start + 999 * interval), to: whole.to, first: 5000 });
    expect(lastTick.nodes).toHaveLength(1000);
    expect(lastTick.pageInfo.hasNextPage).toBe(false);
    const tail = await page({ ...whole, first: 5000, after: lastTick.pageInfo.endCursor });
    expect(tail).toEqual({ nodes: [], pageInfo: { hasNextPage: false, endCursor: null } });
  });
});

function* takeFrom<T>(rows: Iterable<T>, skip: number, count: number): Generator<T> {
  let i = 0;
  for (const row of rows) {
    if (i >= skip + count) return;
    if (i++ >= skip) yield row;
  }
}
