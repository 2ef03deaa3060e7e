import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { authenticate, gql, startReceiver } from './helpers.ts';
import { EDGES_QUERY, readEdges } from './variant-readers.ts';

const clock = new FakeClock('2026-01-08T00:00:00Z');
let s: Sandbox;
let readToken: string;
let writeToken: string;
beforeAll(async () => {
  s = await startSandbox({ clock, seed: 4, apiVariant: 'edges', lateArrivalMaxMs: 0, expiresIn: 86_400 });
  readToken = await authenticate(s.url, s.customers[0]!.readKey);
  writeToken = await authenticate(s.url, s.customers[0]!.writeKey);
});
afterAll(() => s.close());

const events = (variables: Record<string, unknown>) => gql(s.url, readToken, { query: EDGES_QUERY, operationName: 'Events', variables });
const TICK = '2026-01-07T10:00:00.000Z';

describe('sandbox API variant edges (Relay edges, GitHub/Shopify-like)', () => {
  it('serves edges with a cursor each, a nested floor space, an enum status and +00:00 times; any edge cursor resumes after its node', async () => {
    const filter = { observedFrom: '2026-01-07T10:00:00+00:00', observedBefore: '2026-01-07T11:00:00Z' };
    const res = await events({ filter, first: 30 });
    const page = res.json.data.occupancyEvents;
    expect(res.json.data.occupancyEvents.nodes).toBeUndefined();
    expect(page.edges).toHaveLength(30);
    expect(page.pageInfo).toEqual({ hasNextPage: true, endCursor: page.edges[29].cursor });
    const truth = [...s.truth.observations(s.customers[0]!.id, { from: TICK, to: '2026-01-07T11:00:00Z' })];
    expect(page.edges[0].node).toEqual({
      id: truth[0]!.id,
      floorSpace: { id: truth[0]!.floorSpaceId },
      status: truth[0]!.occupancyStatus === 'CurrentlyOccupied' ? 'CURRENTLY_OCCUPIED' : 'NOT_OCCUPIED',
      headcount: truth[0]!.headcount,
      observedAt: '2026-01-07T10:00:00.000+00:00',
    });
    const resumed = (await events({ filter, first: 5, after: page.edges[9].cursor })).json.data.occupancyEvents;
    expect(resumed.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual(truth.slice(10, 15).map((o) => o.id));
  });

  it('treats the filter as half-open [observedFrom, observedBefore), in milliseconds', async () => {
    const at = await readEdges(s.url, readToken, TICK, '2026-01-07T10:00:00.001Z', 100);
    expect(at.records).toHaveLength(12);
    expect(at.records.every((r) => r.created === TICK)).toBe(true);
    expect((await readEdges(s.url, readToken, '2026-01-07T09:55:00.001Z', TICK, 100)).records).toHaveLength(0);
    // The same instant with another offset is the same bound.
    expect((await readEdges(s.url, readToken, '2026-01-07T12:00:00+02:00', '2026-01-07T12:00:00.001+02:00', 100)).records).toHaveLength(12);
  });

  it('refuses first outside 1..100 with a deterministic BAD_USER_INPUT error, the same every time; first is required', async () => {
    const filter = { observedFrom: TICK, observedBefore: '2026-01-07T11:00:00Z' };
    for (const first of [0, 101, 500]) {
      const answers = [await events({ filter, first }), await events({ filter, first })];
      for (const res of answers) {
        expect(res.status).toBe(200);
        expect(res.json.data).toBeNull();
        expect(res.json.errors).toHaveLength(1);
        expect(res.json.errors[0].message).toBe(`first must be between 1 and 100, got ${first}`);
        expect(res.json.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'first' });
      }
      expect(answers[0]!.text).toBe(answers[1]!.text);
    }
    expect((await events({ filter, first: 100 })).json.data.occupancyEvents.edges).toHaveLength(100);
    const missing = await gql(s.url, readToken, { query: '{ occupancyEvents(filter: { observedFrom: "2026-01-07T10:00:00Z", observedBefore: "2026-01-07T11:00:00Z" }) { pageInfo { hasNextPage } } }' });
    expect(missing.status).toBe(400);
    expect(missing.json.errors[0].message).toMatch(/occupancyEvents\(first:\)" of type "Int!" is required/);
  });

  it('refuses a cursor it did not hand out, v1 cursors included', async () => {
    const v1Cursor = Buffer.from(`occ1:${Date.parse(TICK)}:00000000-0000-0000-0000-000000000000`).toString('base64url');
    for (const after of ['nonsense', v1Cursor]) {
      const res = await events({ filter: { observedFrom: TICK, observedBefore: '2026-01-07T11:00:00Z' }, first: 10, after });
      expect(res.json.errors[0]).toMatchObject({ message: expect.stringMatching(/^after: not a cursor returned by this API/), extensions: { code: 'BAD_USER_INPUT' } });
    }
  });

  it('registers with webhookSubscriptionCreate, delivers the documented body, updates with webhookSubscriptionUpdate and lists with webhookSubscriptions', async () => {
    const receiver = await startReceiver();
    try {
      const create = await gql(s.url, writeToken, {
        query: `mutation Create($input: WebhookSubscriptionInput!) {
          webhookSubscriptionCreate(input: $input) { webhookSubscription { id callbackUrl topics signed compressed additionalHeaders { key value } } userErrors { field message } }
        }`,
        operationName: 'Create',
        variables: { input: { callbackUrl: receiver.url, topics: ['OCCUPANCY'], additionalHeaders: [{ key: 'X-Token', value: 't1' }] } },
      });
      const created = create.json.data.webhookSubscriptionCreate;
      expect(created.userErrors).toEqual([]);
      expect(created.webhookSubscription).toMatchObject({ callbackUrl: receiver.url, topics: ['OCCUPANCY'], signed: false, compressed: false });
      const id = created.webhookSubscription.id as string;

      clock.advance(10 * 60_000);
      await s.pumpDeliveries();
      expect(receiver.received.length).toBeGreaterThanOrEqual(1);
      const body = JSON.parse(receiver.received[0]!.raw.toString('utf8'));
      expect(Object.keys(body)).toEqual(['Id', 'Type', 'CustomerId', 'Created', 'Sent', 'Data']);
      expect(body.Type).toBe('Occupancy');
      expect(['CurrentlyOccupied', 'Unoccupied']).toContain(body.Data[0].OccupancyStatus);
      expect(receiver.received[0]!.headers['x-token']).toBe('t1');

      const UPDATE = `mutation Update($id: ID!, $input: WebhookSubscriptionUpdateInput!) {
        webhookSubscriptionUpdate(id: $id, input: $input) { webhookSubscription { id signed compressed } userErrors { field message } }
      }`;
      const updated = await gql(s.url, writeToken, { query: UPDATE, operationName: 'Update', variables: { id, input: { signatureSecret: 'k'.repeat(64), compressed: true } } });
      expect(updated.json.data.webhookSubscriptionUpdate).toEqual({ webhookSubscription: { id, signed: true, compressed: true }, userErrors: [] });
      const unknown = await gql(s.url, writeToken, { query: UPDATE, operationName: 'Update', variables: { id: '00000000-0000-0000-0000-000000000000', input: { compressed: false } } });
      expect(unknown.json.data.webhookSubscriptionUpdate).toEqual({ webhookSubscription: null, userErrors: [{ field: ['id'], message: expect.stringMatching(/no webhook/) }] });

      const LIST = `query List($first: Int!, $after: String) {
        webhookSubscriptions(first: $first, after: $after) { edges { cursor node { id callbackUrl } } pageInfo { hasNextPage endCursor } }
      }`;
      const second = await gql(s.url, writeToken, { query: 'mutation { webhookSubscriptionCreate(input: { callbackUrl: "https://example.com/h", topics: [OCCUPANCY] }) { webhookSubscription { id } } }' });
      const secondId = second.json.data.webhookSubscriptionCreate.webhookSubscription.id;
      const one = (await gql(s.url, readToken, { query: LIST, operationName: 'List', variables: { first: 1 } })).json.data.webhookSubscriptions;
      expect(one.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual([id]);
      expect(one.pageInfo.hasNextPage).toBe(true);
      const two = (await gql(s.url, readToken, { query: LIST, operationName: 'List', variables: { first: 1, after: one.pageInfo.endCursor } })).json.data.webhookSubscriptions;
      expect(two.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual([secondId]);
      expect(two.pageInfo.hasNextPage).toBe(false);
      expect(s.webhooks(s.customers[0]!.id).map((w) => w.id)).toEqual([id, secondId]);
    } finally {
      await receiver.close();
    }
  });

  it('reports refused webhook input as userErrors naming the field the client sent, and changes nothing', async () => {
    const before = s.webhooks(s.customers[0]!.id).length;
    const res = await gql(s.url, writeToken, {
      query: 'mutation { webhookSubscriptionCreate(input: { callbackUrl: "http://example.com/h", topics: [OCCUPANCY], signatureSecret: "short" }) { webhookSubscription { id } userErrors { field message } } }',
    });
    expect(res.json.errors).toBeUndefined();
    expect(res.json.data.webhookSubscriptionCreate).toEqual({
      webhookSubscription: null,
      userErrors: [{ field: ['input', 'callbackUrl'], message: expect.stringMatching(/^input\.callbackUrl: the webhook endpoint must use HTTPS/) }],
    });
    const headers = await gql(s.url, writeToken, {
      query: 'mutation { webhookSubscriptionCreate(input: { callbackUrl: "https://example.com/h", topics: [OCCUPANCY], additionalHeaders: [{ key: "Host", value: "x" }] }) { userErrors { field } } }',
    });
    expect(headers.json.data.webhookSubscriptionCreate.userErrors).toEqual([{ field: ['input', 'additionalHeaders', '0', 'key'] }]);
    expect(s.webhooks(s.customers[0]!.id)).toHaveLength(before);
  });

  it('has no test-event mutation and none of v1\'s webhook operation names', async () => {
    for (const query of ['mutation { sendTestEvent(webhookId: "x") }', 'mutation { registerWebhook(input: { url: "https://e.com", eventTypes: ["Occupancy"] }) { id } }', '{ webhooks { id } }']) {
      const res = await gql(s.url, writeToken, { query });
      expect(res.status).toBe(400);
      expect(res.json.errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    }
  });
});
