import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { systemClock, type Clock } from '../clock.ts';
import { silentLogger } from '../logger.ts';
import { DataModel } from './data.ts';
import { DeliveryEngine } from './deliveries.ts';
import { FaultPlan } from './faults.ts';
import { ANY_VARIANT_KINDS, Misbehaviour, type MisbehaviourKind } from './misbehave.ts';
import { API_VARIANT_INFO, API_VARIANTS, isApiVariant, type ApiVariant } from './api-variants.ts';
import { buildSandboxSchema } from './graphql.ts';
import { variantReadings, variantRootValue, variantSchemaSdl } from './variants/registry.ts';
import { createHandler } from './handler.ts';
import type { GroundTruthObservation, ObservationRange, Sandbox, SandboxOptions, SandboxStats } from './interfaces.ts';
import { TokenService } from './tokens.ts';
import { WebhookRegistry, webhookView } from './webhook-registry.ts';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

function toMs(option: string, value: string | number): number {
  const ms = typeof value === 'number' ? value : Date.parse(value);
  if (!Number.isFinite(ms)) {
    throw new RangeError(`sandbox option ${option}: ${JSON.stringify(value)} is not a time; pass epoch ms or an ISO 8601 string`);
  }
  return ms;
}

function intOption(name: string, value: number | undefined, fallback: number, min: number): number {
  const v = value ?? fallback;
  if (!Number.isSafeInteger(v) || v < min) throw new RangeError(`sandbox option ${name} must be an integer >= ${min}, got ${JSON.stringify(value)}`);
  return v;
}

/**
 * Starts the sandbox: a local stand-in for the platform's external API (auth, GraphQL, webhook deliveries), with
 * deterministic data, injectable faults and ground truth for tests.
 *
 * @example
 * const clock = new FakeClock('2026-01-08T00:00:00Z');
 * const sandbox = await startSandbox({ clock, seed: 7 });
 * const [customer] = sandbox.customers; // customer.readKey.key / .secret for POST {sandbox.url}/api/v1/auth
 * clock.advance(15 * 60_000);
 * await sandbox.pumpDeliveries();
 * await sandbox.close();
 */
export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  const model = dataModelOf(options, clock);
  const stats: SandboxStats = { authCalls: 0, queries: 0, faults: {}, deliveries: { attempts: 0, succeeded: 0, failed: 0, abandoned: 0, dropped: 0 } };
  const apiVariant = options.apiVariant ?? 'v1';
  if (!isApiVariant(apiVariant)) {
    throw new RangeError(`sandbox option apiVariant: ${JSON.stringify(apiVariant)} is not a variant; use one of ${API_VARIANTS.join(', ')}`);
  }
  const tokens = new TokenService(model, clock, intOption('expiresIn', options.expiresIn, 900, 1));
  const registry = new WebhookRegistry(options.seed ?? 1);
  const hooks = options.webhooks ?? {};
  const engine = deliveryEngineOf(options, { model, registry, clock, stats, logger }, apiVariant);
  let faults = new FaultPlan(options.faults);
  // strayNullHeadcount spoils the records of each customer's first floor space (by id), and only those.
  const strayFloorSpaceIds = new Set(model.customers.map((c) => c.buildings.flatMap((b) => b.floorSpaces.map((f) => f.id)).sort()[0]!).filter(Boolean));
  const misbehaviourOf = (kind: MisbehaviourKind | undefined) => {
    if (kind === undefined) return undefined;
    // Refused rather than ignored: a test that believes the sandbox misbehaves while it does not proves nothing.
    if (apiVariant !== 'v1' && !ANY_VARIANT_KINDS.has(kind)) {
      throw new RangeError(`sandbox misbehave: ${kind} rewrites v1's occupancy query, which the ${apiVariant} variant does not serve; use apiVariant v1 or one of ${[...ANY_VARIANT_KINDS].join(', ')}`);
    }
    return new Misbehaviour(kind, strayFloorSpaceIds);
  };
  let misbehave = misbehaviourOf(options.misbehave);
  const closing = new AbortController();
  const schema = buildSandboxSchema(options.schemaSdl ?? variantSchemaSdl(apiVariant));
  const rootValue = variantRootValue(apiVariant);

  const handler = createHandler({ model, tokens, schema, rootValue, registry, engine, clock, stats, logger, faults: () => faults, misbehave: () => misbehave, closing: closing.signal });
  // The Date header tells clients the platform's time (occupancy-sync caps its watermark with it): it must come from
  // the sandbox clock, which tests move, not from the host clock node:http would use.
  const server = createServer((req, res) => {
    res.setHeader('Date', misbehave ? misbehave.dateHeader(clock.now()) : new Date(clock.now()).toUTCString());
    return handler(req, res);
  });
  const { url, port } = await listen(server, options);

  let timer: NodeJS.Timeout | undefined;
  if (hooks.autoDeliver) {
    timer = setInterval(() => void engine.pump(), intOption('webhooks.pollMs', hooks.pollMs, 1000, 1));
    timer.unref();
  }
  logger.info({ url, customers: model.customers.length }, 'sandbox listening');

  let closed: Promise<void> | undefined;
  return {
    url,
    port,
    apiVariant,
    customers: customerKeys(model),
    truth: groundTruth(model, clock, apiVariant),
    removeBuilding: (customerId, buildingId) => model.removeBuilding(model.requireCustomer(customerId), buildingId, clock.now()),
    restoreBuilding: (customerId, buildingId) => model.restoreBuilding(model.requireCustomer(customerId), buildingId, clock.now()),
    revokeTokens: (customerId) => tokens.revokeAll(customerId),
    setFaults: (next) => {
      faults = new FaultPlan(next);
    },
    setMisbehaviour: (kind) => {
      misbehave = misbehaviourOf(kind);
    },
    strayFloorSpaceIds: () => [...strayFloorSpaceIds],
    stats,
    webhooks: (customerId) => registry.list(model.requireCustomer(customerId).id).map(webhookView),
    pumpDeliveries: () => engine.pump(),
    pendingDeliveries: () => engine.pendingCount,
    close: () => {
      closed ??= (async () => {
        if (timer) clearInterval(timer);
        closing.abort();
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeAllConnections();
        await Promise.all([stopped, engine.close()]);
      })();
      return closed;
    },
  };
}

/** The customer's buildings present now: what the listings answer and the truth holds. */
function present(model: DataModel, clock: Clock, customerId: string) {
  return model.currentBuildings(model.requireCustomer(customerId), clock.now());
}

/** The model's defaults and bounds applied to the options: the synthetic data the sandbox serves. */
function dataModelOf(options: SandboxOptions, clock: Clock): DataModel {
  const intervalMs = intOption('intervalMs', options.intervalMs, 5 * MINUTE, 1);
  const dataStartMs =
    options.dataStart === undefined
      ? Math.floor((clock.now() - 7 * DAY) / intervalMs) * intervalMs
      : toMs('dataStart', options.dataStart);
  return new DataModel({
    seed: intOption('seed', options.seed, 1, Number.MIN_SAFE_INTEGER),
    customers: intOption('customers', options.customers, 2, 1),
    buildingsPerCustomer: intOption('buildingsPerCustomer', options.buildingsPerCustomer, 3, 0),
    floorSpacesPerBuilding: intOption('floorSpacesPerBuilding', options.floorSpacesPerBuilding, 4, 0),
    dataStartMs,
    intervalMs,
    lateArrivalMaxMs: intOption('lateArrivalMaxMs', options.lateArrivalMaxMs, 5 * MINUTE, 0),
  });
}

/** Listens on the options' port and host (port 0: a free one); the URL clients use. */
export async function listen(server: Server, options: SandboxOptions): Promise<{ url: string; port: number }> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;
  return { url, port: address.port };
}

/** What the sandbox serves, for tests to compare with what was synced: the present dimensions and every observation. */
function groundTruth(model: DataModel, clock: Clock, apiVariant: ApiVariant): Sandbox['truth'] {
  return {
    buildings: (customerId) => present(model, clock, customerId).map((b) => ({ id: b.id, name: b.name, timeZone: b.timeZone })),
    floors: (customerId) => present(model, clock, customerId).flatMap((b) => b.floors.map((f) => ({ id: f.id, buildingId: f.buildingId, name: f.name, level: f.level }))),
    floorSpaces: (customerId) =>
      present(model, clock, customerId).flatMap((b) =>
        b.floorSpaces.map((f) => ({ id: f.id, buildingId: f.buildingId, floorId: f.floorId, name: f.name, capacity: f.capacity, spaceType: f.spaceType })),
      ),
    observations: function* (customerId: string, range: ObservationRange = {}): Generator<GroundTruthObservation> {
      const customer = model.requireCustomer(customerId);
      const visibleAtMs = range.visibleAt === undefined ? clock.now() : toMs('visibleAt', range.visibleAt);
      const ticks = model.observations(customer, {
        fromMs: range.from === undefined ? model.dataStartMs : toMs('from', range.from),
        toMs: range.to === undefined ? visibleAtMs + 1 : toMs('to', range.to),
        visibleAtMs,
      });
      const rows = variantReadings(apiVariant, model, customer, ticks);
      const counted = API_VARIANT_INFO[apiVariant].headcount;
      // One ISO conversion per tick, not per row: a million-row comparison spends most of its time here otherwise.
      let tickMs = Number.NaN;
      let created = '';
      let visibleAt = '';
      for (const o of rows) {
        if (o.createdMs !== tickMs) {
          tickMs = o.createdMs;
          created = new Date(o.createdMs).toISOString();
          visibleAt = new Date(o.visibleAtMs).toISOString();
        }
        yield {
          id: o.id,
          customerId: customer.id,
          floorSpaceId: o.floorSpaceId,
          buildingId: o.buildingId,
          occupancyStatus: o.occupancyStatus,
          headcount: counted ? o.headcount : null,
          created,
          visibleAt,
        };
      }
    },
  };
}

/** Delivers the webhooks registered through the API, with the options' timeouts, retries and drops, in the variant's readings. */
function deliveryEngineOf(options: SandboxOptions, parts: Pick<ConstructorParameters<typeof DeliveryEngine>[0], 'model' | 'registry' | 'clock' | 'stats' | 'logger'>, apiVariant: ApiVariant): DeliveryEngine {
  const model = parts.model;
  const hooks = options.webhooks ?? {};
  return new DeliveryEngine({
    ...parts,
    timeoutMs: intOption('webhooks.timeoutMs', hooks.timeoutMs, 5000, 1),
    maxAttempts: intOption('webhooks.maxAttempts', hooks.maxAttempts, 5, 1),
    retryBaseMs: intOption('webhooks.retryBaseMs', hooks.retryBaseMs, 1000, 0),
    rejectUnauthorized: hooks.rejectUnauthorized ?? true,
    dropEvery: intOption('webhooks.dropEvery', hooks.dropEvery, 0, 0),
    // The platform delivers the readings it holds: only the status changes of change-only sensors, no headcount from
    // presence-only ones.
    tickReadings: (customer, k) => [...variantReadings(apiVariant, model, customer, model.tickObservations(customer, k))],
    headcount: API_VARIANT_INFO[apiVariant].headcount,
  });
}

/** Each customer's keys as the sandbox prints and hands them out (copies: a caller cannot change the model's). */
function customerKeys(model: DataModel): Sandbox['customers'] {
  return model.customers.map((c) => ({
    id: c.id,
    name: c.name,
    readKey: { ...c.readKey, scopes: [...c.readKey.scopes] },
    writeKey: { ...c.writeKey, scopes: [...c.writeKey.scopes] },
    keys: c.keys.map((k) => ({ ...k, scopes: [...k.scopes] })),
  }));
}
