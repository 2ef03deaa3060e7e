import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { startSandbox, type MisbehaviourKind, type Sandbox } from '../../src/sandbox/index.ts';
import { authenticate, gql, OCCUPANCY_QUERY, pageAll, type Node } from './helpers.ts';
import { canonical } from './variant-readers.ts';

const open: Sandbox[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});
async function misbehaving(kind: MisbehaviourKind) {
  const s = await startSandbox({ clock: new FakeClock('2026-01-08T00:00:00Z'), seed: 12, misbehave: kind, lateArrivalMaxMs: 0, expiresIn: 86_400 });
  open.push(s);
  return { s, token: await authenticate(s.url, s.customers[0]!.readKey) };
}
type Page = { nodes: Node[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } };
async function occupancy(s: Sandbox, token: string, variables: Record<string, unknown>): Promise<Page> {
  const res = await gql(s.url, token, { query: OCCUPANCY_QUERY, operationName: 'Occupancy', variables });
  expect(res.json.errors).toBeUndefined();
  return res.json.data.occupancy;
}
const HOUR = 3_600_000;

describe('sandbox misbehaviours of the v1 occupancy query', () => {
  it('localTimeWindows: every window answers the readings two hours earlier (the bounds read as UTC+02:00), all outside it', async () => {
    const { s, token } = await misbehaving('localTimeWindows');
    const c = s.customers[0]!;
    const [from, to] = ['2026-01-07T10:00:00.000Z', '2026-01-07T12:00:00.000Z'];
    const { nodes, pages } = await pageAll(s.url, token, from, to, 50);
    expect(pages).toBeGreaterThan(1);
    expect(nodes).toEqual([...s.truth.observations(c.id, { from: Date.parse(from) - 2 * HOUR, to: Date.parse(to) - 2 * HOUR })].map(canonical));
    expect(nodes.every((n) => n.created >= '2026-01-07T08:00:00.000Z' && n.created < from)).toBe(true);
    // The ground truth is not shifted, and behaving again answers the window asked for.
    s.setMisbehaviour(undefined);
    expect((await pageAll(s.url, token, from, to, 50)).nodes).toEqual([...s.truth.observations(c.id, { from, to })].map(canonical));
  });

  it('ignoreAfter: a later page repeats the first page and hands back the cursor it was sent (the cursor does not advance)', async () => {
    const { s, token } = await misbehaving('ignoreAfter');
    const window = { from: '2026-01-07T10:00:00Z', to: '2026-01-07T12:00:00Z', first: 20 };
    const first = await occupancy(s, token, window);
    expect(first.pageInfo.hasNextPage).toBe(true);
    const second = await occupancy(s, token, { ...window, after: first.pageInfo.endCursor });
    const third = await occupancy(s, token, { ...window, after: second.pageInfo.endCursor });
    expect(second).toEqual(first);
    expect(third).toEqual(first);
  });

  it('sameRecordsFreshCursor: a later page repeats the first page under a new endCursor each time, hasNextPage staying true', async () => {
    const { s, token } = await misbehaving('sameRecordsFreshCursor');
    const window = { from: '2026-01-07T10:00:00Z', to: '2026-01-07T12:00:00Z', first: 20 };
    const first = await occupancy(s, token, window);
    const second = await occupancy(s, token, { ...window, after: first.pageInfo.endCursor });
    const third = await occupancy(s, token, { ...window, after: second.pageInfo.endCursor });
    expect([second.nodes, third.nodes]).toEqual([first.nodes, first.nodes]);
    expect([second.pageInfo.hasNextPage, third.pageInfo.hasNextPage]).toEqual([true, true]);
    expect(new Set([first.pageInfo.endCursor, second.pageInfo.endCursor, third.pageInfo.endCursor]).size).toBe(3);
  });
});
