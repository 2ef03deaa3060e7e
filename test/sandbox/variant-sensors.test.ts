import { buildSchema } from 'graphql';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { API_VARIANT_INFO, startSandbox, type GroundTruthObservation, type Sandbox, type SandboxOptions } from '../../src/sandbox/index.ts';
import { ROOT } from '../support/process.ts';
import { authenticate, gql, startReceiver } from './helpers.ts';
import { canonical, readChange, readPresence, type Canonical } from './variant-readers.ts';

/**
 * The sandbox's presence-only and change-only sensors (docs/sandbox.md, "API variants"). Their truth is computed here
 * independently, from the default variant's every-tick readings with the same seed: presence is that with no
 * headcount; change keeps a space's reading where its status differs from its reading at the tick before.
 */

const open: Sandbox[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});
async function sandbox(options: SandboxOptions) {
  const s = await startSandbox(options);
  open.push(s);
  return s;
}
const MIN = 60_000;
const iso = (ms: number) => new Date(ms).toISOString();
const T = Date.parse('2026-01-08T00:00:00Z');
const OPTIONS = { seed: 5, lateArrivalMaxMs: 15 * MIN, expiresIn: 86_400, dataStart: T - 2 * 86_400_000 } as const;

/** Every tick's readings of the default variant (v1), visible at `visibleAt`, from the data's start. */
async function everyTick(visibleAt: number): Promise<GroundTruthObservation[]> {
  const v1 = await sandbox({ ...OPTIONS, clock: new FakeClock(visibleAt), apiVariant: 'v1' });
  return [...v1.truth.observations(v1.customers[0]!.id, { visibleAt: T + 86_400_000, to: visibleAt + 1 })];
}

/** The status changes of every-tick readings: per space, a reading whose status differs from the space's reading before. */
function changesOf(ticks: GroundTruthObservation[], intervalMs = 5 * MIN): GroundTruthObservation[] {
  const last = new Map<string, { at: number; status: string }>();
  const out: GroundTruthObservation[] = [];
  for (const o of ticks) {
    const at = Date.parse(o.created);
    const before = last.get(o.floorSpaceId);
    if (!before || before.at !== at - intervalMs || before.status !== o.occupancyStatus) out.push(o);
    last.set(o.floorSpaceId, { at, status: o.occupancyStatus });
  }
  return out;
}

const inWindow = (o: GroundTruthObservation, from: number, to: number, now: number) =>
  Date.parse(o.created) >= from && Date.parse(o.created) < to && Date.parse(o.visibleAt) <= now;

describe('the presence variant: an occupied flag and no headcount', () => {
  it('its reading type has no headcount field at all; the truth holds null where v1 counts people', async () => {
    const sdl = buildSchema(readFileSync(`${ROOT}/${API_VARIANT_INFO.presence.schemaFile}`, 'utf8'));
    expect(Object.keys((sdl.getType('PresenceReading') as any).getFields())).toEqual(['id', 'spaceId', 'occupied', 'observedAt']);
    expect(API_VARIANT_INFO.presence).toMatchObject({ headcount: false, sampling: 'interval' });
  });

  it('paging a window yields exactly the truth, which is v1\'s readings with the headcount left out, before and after a late tick', async () => {
    const now = T + 6 * 60 * MIN;
    const clock = new FakeClock(now);
    const s = await sandbox({ ...OPTIONS, clock, apiVariant: 'presence' });
    const c = s.customers[0]!;
    const token = await authenticate(s.url, c.readKey);
    const [from, to] = [now - 3 * 60 * MIN, now];
    const ticks = await everyTick(now);
    const expected = (at: number) => ticks.filter((o) => inWindow(o, from, to, at)).map((o) => ({ ...canonical(o), headcount: null }));
    expect(expected(now).length).toBeGreaterThan(300);

    const read = await readPresence(s.url, token, iso(from), iso(to), 37);
    expect(read.pages).toBeGreaterThan(1);
    expect(read.records).toEqual(expected(now));
    expect([...s.truth.observations(c.id, { from, to })].map(canonical)).toEqual(expected(now));
    expect(new Set(read.records.map((r) => r.occupancyStatus))).toEqual(new Set(['CurrentlyOccupied', 'Unoccupied']));

    // A tick still hidden at `now` arrives later: the same read then holds it.
    const later = now + 15 * MIN;
    clock.set(later);
    const again = await readPresence(s.url, token, iso(from), iso(to), 1000);
    expect(again.records).toEqual(ticks.filter((o) => inWindow(o, from, to, later)).map((o) => ({ ...canonical(o), headcount: null })));
  });
});

describe('the change variant: an event only when a space\'s status changes', () => {
  it('paging a window yields exactly the status changes of v1\'s every-tick readings, each a real change', async () => {
    const now = T + 10 * 60 * MIN;
    const clock = new FakeClock(now);
    const s = await sandbox({ ...OPTIONS, clock, apiVariant: 'change' });
    const c = s.customers[0]!;
    const token = await authenticate(s.url, c.readKey);
    const [from, to] = [now - 6 * 60 * MIN, now];
    const ticks = await everyTick(now);
    const changes = changesOf(ticks);
    const expected = changes.filter((o) => inWindow(o, from, to, now)).map(canonical);
    // Far fewer events than readings, and still many: the data changes through the working day.
    const readings = ticks.filter((o) => inWindow(o, from, to, now)).length;
    expect(expected.length).toBeGreaterThan(30);
    expect(expected.length).toBeLessThan(readings * 0.7);

    const read = await readChange(s.url, token, iso(from), iso(to), 7);
    expect(read.pages).toBeGreaterThan(2);
    expect(read.records).toEqual(expected);
    expect([...s.truth.observations(c.id, { from, to })].map(canonical)).toEqual(expected);

    // Each event changes its space's status: no two consecutive events of a space carry the same one.
    const bySpace = new Map<string, Canonical[]>();
    for (const e of changes.map(canonical)) bySpace.set(e.floorSpaceId, [...(bySpace.get(e.floorSpaceId) ?? []), e]);
    expect(bySpace.size).toBe(12);
    for (const events of bySpace.values()) {
      for (let i = 1; i < events.length; i++) expect(events[i]!.occupancyStatus).not.toBe(events[i - 1]!.occupancyStatus);
    }
  });

  it('an event is the same whenever it is asked for: a late tick adds its events and changes none before or after it', async () => {
    const now = T + 10 * 60 * MIN;
    const clock = new FakeClock(now);
    const s = await sandbox({ ...OPTIONS, clock, apiVariant: 'change' });
    const token = await authenticate(s.url, s.customers[0]!.readKey);
    const [from, to] = [now - 2 * 60 * MIN, now];
    const all = changesOf(await everyTick(now + 60 * MIN));
    const before = await readChange(s.url, token, iso(from), iso(to), 500);
    expect(before.records).toEqual(all.filter((o) => inWindow(o, from, to, now)).map(canonical));
    clock.set(now + 20 * MIN);
    const after = await readChange(s.url, token, iso(from), iso(to), 500);
    expect(after.records).toEqual(all.filter((o) => inWindow(o, from, to, now + 20 * MIN)).map(canonical));
    expect(after.records.length).toBeGreaterThan(before.records.length);
  });

  it('refuses a limit out of range and a cursor it did not hand out, naming the argument', async () => {
    const s = await sandbox({ ...OPTIONS, clock: new FakeClock(T), apiVariant: 'change' });
    const token = await authenticate(s.url, s.customers[0]!.readKey);
    await expect(readChange(s.url, token, iso(T - 60 * MIN), iso(T), 501)).rejects.toThrow(/limit must be between 1 and 500, got 501/);
    const res = await gql(s.url, token, { query: '{ statusChanges(from: "2026-01-07T00:00:00Z", to: "2026-01-08T00:00:00Z", cursor: "nope") { nextCursor } }' });
    expect(res.json.errors[0]).toMatchObject({ message: expect.stringMatching(/^cursor: not a cursor returned by this API/), extensions: { code: 'BAD_USER_INPUT', field: 'cursor' } });
  });
});

describe('webhook deliveries carry the readings the variant holds', () => {
  it.each(['presence', 'change'] as const)('%s: a tick delivers its readings as the query answers them (no headcount; only changes)', async (variant) => {
    const now = T + 9 * 60 * MIN;
    const clock = new FakeClock(now);
    const s = await sandbox({ ...OPTIONS, clock, apiVariant: variant });
    const receiver = await startReceiver();
    try {
      const c = s.customers[0]!;
      const token = await authenticate(s.url, c.writeKey);
      const reg = await gql(s.url, token, {
        query: 'mutation R($input: RegisterWebhookInput!) { registerWebhook(input: $input) { id } }',
        variables: { input: { url: receiver.url, eventTypes: ['Occupancy'] } },
        operationName: 'R',
      });
      expect(reg.json.data.registerWebhook.id).toEqual(expect.any(String));
      clock.advance(60 * MIN);
      await s.pumpDeliveries();
      const delivered = receiver.received
        .map((r) => JSON.parse(r.raw.toString('utf8')) as { Created: string; Data: Array<{ FloorSpaceId: string; OccupancyStatus: string; Headcount: number | null }> })
        .flatMap((b) => b.Data.map((d) => ({ created: b.Created, floorSpaceId: d.FloorSpaceId, occupancyStatus: d.OccupancyStatus, headcount: d.Headcount })))
        .sort((a, b) => (a.created < b.created ? -1 : a.created > b.created ? 1 : a.floorSpaceId < b.floorSpaceId ? -1 : 1));
      const truth = [...s.truth.observations(c.id, { from: now - 30 * MIN })]
        .filter((o) => Date.parse(o.visibleAt) > now)
        .map((o) => ({ created: o.created, floorSpaceId: o.floorSpaceId, occupancyStatus: o.occupancyStatus, headcount: o.headcount }))
        .sort((a, b) => (a.created < b.created ? -1 : a.created > b.created ? 1 : a.floorSpaceId < b.floorSpaceId ? -1 : 1));
      expect(truth.length).toBeGreaterThan(5);
      expect(delivered).toEqual(truth);
      if (variant === 'presence') expect(delivered.every((d) => d.headcount === null)).toBe(true);
      // Change-only: fewer items than 12 spaces x ticks, and no delivery for a tick without a change.
      if (variant === 'change') expect(receiver.received.every((r) => JSON.parse(r.raw.toString('utf8')).Data.length > 0)).toBe(true);
    } finally {
      await receiver.close();
    }
  });
});
