import type { Clock } from '../clock.ts';
import type { Logger } from '../logger.ts';
import type { ApiVariant } from './api-variants.ts';
import type { MisbehaviourKind } from './misbehave.ts';

export type { ApiVariant, MisbehaviourKind };

/** Per-request fault rates (0..1), drawn deterministically from `seed` for each request to /api/external/query. */
export interface FaultOptions {
  seed?: number;
  /** 500/502/503 with a JSON body. */
  serverError?: number;
  /** 429 with a `Retry-After` header of `retryAfterSeconds` (default 1). */
  rateLimit?: number;
  retryAfterSeconds?: number;
  /** The socket is destroyed without an answer. */
  connectionReset?: number;
  /** The answer is held back `slowMs` (real time, default 2000) before it is sent. */
  slow?: number;
  slowMs?: number;
  /**
   * Query requests held back as `slow` ones whatever the rates draw, each its own time: request number (0-based, in
   * arrival order since start or the last setFaults) to milliseconds. For a test that needs one particular answer late.
   */
  slowRequests?: Readonly<Record<number, number>>;
  /** A gzip body cut in half: the full Content-Length is announced, then the socket is destroyed. */
  truncatedGzip?: number;
  /** 401 although the token has not expired (as if revoked server-side). */
  revokeToken?: number;
  /** 200 with `errors[]` and `data: null`. */
  graphqlError?: number;
  /** Every request to the auth and query endpoints is answered this much later (real time), as a distant platform is. Default 0. */
  latencyMs?: number;
  /** Also draw serverError, rateLimit, connectionReset and slow for POST /api/v1/auth. Default false. */
  applyToAuth?: boolean;
}

export interface WebhookDeliveryOptions {
  /** Deliver on a real-time timer (with the system clock). Default false: tests call `pumpDeliveries()`. */
  autoDeliver?: boolean;
  /** How long an attempt may take before it counts as failed. Default 5000 ms. */
  timeoutMs?: number;
  /** Attempts per delivery including the first. Default 5. */
  maxAttempts?: number;
  /** Backoff before retry n (1-based) is retryBaseMs * 2^(n-1) on the sandbox clock. Default 1000 ms. */
  retryBaseMs?: number;
  /** Interval of the autoDeliver timer. Default 1000 ms. */
  pollMs?: number;
  /**
   * Never send the Occupancy delivery of every n-th observation tick (ticks whose index is a multiple of n), as a
   * platform that silently loses deliveries would; counted in stats.deliveries.dropped. Default 0: none dropped.
   */
  dropEvery?: number;
  /** Verify receivers' TLS certificates. Default true; false lets a local receiver use a self-signed certificate. */
  rejectUnauthorized?: boolean;
}

export interface SandboxOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0 (a random free port). */
  port?: number;
  /** The sandbox's "now": token expiry, data visibility and delivery due times. Default systemClock. */
  clock?: Clock;
  /** Seed of the synthetic data (ids, names, statuses, headcounts, late-arrival delays). Default 1. */
  seed?: number;
  /** Token lifetime in seconds. Default 900. */
  expiresIn?: number;
  /** Default 2. */
  customers?: number;
  /** Default 3. */
  buildingsPerCustomer?: number;
  /** Default 4. */
  floorSpacesPerBuilding?: number;
  /** First observation tick. Default: the clock's now at start minus 7 days, aligned down to intervalMs. */
  dataStart?: string | number;
  /** Observation tick; every floor space has exactly one reading per tick. Default 5 minutes. */
  intervalMs?: number;
  /** A tick becomes visible at created + a deterministic delay in [0, lateArrivalMaxMs]. Default 5 minutes. */
  lateArrivalMaxMs?: number;
  /** Serve this SDL instead of jobs/schema.graphql (tests: a schema lacking a field). */
  schemaSdl?: string;
  /**
   * The shape of the API to serve over the same data and ground truth (api-variants.ts, docs/sandbox.md): `v1` (the
   * default) the assumed API of jobs/schema.graphql; `v2`, `edges`, `token`, `pages`, `capped`, `presence`, `change`
   * the occupancy query and webhook mutations shaped otherwise, to adapt to with a definitions file. `schemaSdl` replaces the SDL only.
   */
  apiVariant?: ApiVariant;
  faults?: FaultOptions;
  /** A deliberate contract violation to serve (src/sandbox/misbehave.ts); none by default. */
  misbehave?: MisbehaviourKind;
  webhooks?: WebhookDeliveryOptions;
  logger?: Logger;
}

export type SandboxScope = 'ReadPublicApi' | 'WritePublicApi';

export interface SandboxKey {
  key: string;
  secret: string;
  scopes: SandboxScope[];
  /** Write permission of the user who created the key; mutations need it as well as WritePublicApi. */
  userCanWrite: boolean;
}

export interface SandboxCustomer {
  /** UUID. */
  id: string;
  name: string;
  /** ReadPublicApi only. */
  readKey: SandboxKey;
  /** ReadPublicApi + WritePublicApi, user with write permission. */
  writeKey: SandboxKey;
  /** Every key of the customer: readKey, writeKey, and a key with both scopes whose user lacks write permission. */
  keys: SandboxKey[];
}

export interface GroundTruthObservation {
  id: string;
  customerId: string;
  floorSpaceId: string;
  buildingId: string;
  occupancyStatus: string;
  /** null: the variant's sensors count nobody (`presence`), so a copy must store NULL, never 0. */
  headcount: number | null;
  /** ISO 8601 UTC with milliseconds. */
  created: string;
  visibleAt: string;
}

export interface ObservationRange {
  /** Inclusive. Default: dataStart. */
  from?: string | number;
  /** Exclusive. Default: the clock's now. */
  to?: string | number;
  /** Only observations visible at this instant. Default: the clock's now. */
  visibleAt?: string | number;
}

export interface SandboxWebhookView {
  id: string;
  url: string;
  eventTypes: string[];
  additionalHeaders: Array<{ key: string; value: string }>;
  signed: boolean;
  compress: boolean;
}

export interface SandboxStats {
  authCalls: number;
  queries: number;
  /** Injected faults by kind: serverError, rateLimit, connectionReset, slow, truncatedGzip, revokeToken, graphqlError. */
  faults: Record<string, number>;
  /** attempts = succeeded + failed (per attempt); abandoned = deliveries that failed maxAttempts times. */
  /** dropped: readings of deliveries never sent on purpose (webhooks.dropEvery). */
  deliveries: { attempts: number; succeeded: number; failed: number; abandoned: number; dropped: number };
}

/** A building as the sandbox holds it (the `buildings` query of the default variant answers exactly this). */
export interface TruthBuilding {
  id: string;
  name: string;
  timeZone: string;
}

export interface TruthFloor {
  id: string;
  buildingId: string;
  name: string;
  /** 0 the ground floor, negative below it. */
  level: number;
}

export interface TruthFloorSpace {
  id: string;
  buildingId: string;
  floorId: string;
  name: string;
  capacity: number | null;
  /** `open_area`, `meeting_room`, `focus_room` or `desk`. */
  spaceType: string;
}

export interface Sandbox {
  /** Base URL, e.g. http://127.0.0.1:43121 (no trailing slash). */
  url: string;
  port: number;
  /** The API variant served (SandboxOptions.apiVariant). */
  apiVariant: ApiVariant;
  customers: SandboxCustomer[];
  /** Exact data held, for comparison with the database. */
  truth: {
    /** Current (not removed) buildings, each with its IANA time zone. */
    buildings(customerId: string): TruthBuilding[];
    /** The floors of the current buildings. */
    floors(customerId: string): TruthFloor[];
    /** The floor spaces of the current buildings; `capacity` null where the platform does not know it. */
    floorSpaces(customerId: string): TruthFloorSpace[];
    /**
     * The readings the variant holds, ordered by (created, id); only floor spaces of current buildings; visibleAt
     * defaults to the clock's now. Every variant's are the default variant's, in canonical spelling, except: `change`
     * holds only the status changes, and `presence` holds no headcount (null).
     */
    observations(customerId: string, range?: ObservationRange): Iterable<GroundTruthObservation>;
  };
  removeBuilding(customerId: string, buildingId: string): void;
  restoreBuilding(customerId: string, buildingId: string): void;
  /** Outstanding tokens (of one customer, or all) get 401 from now on, before their expiry. */
  revokeTokens(customerId?: string): void;
  setFaults(faults: FaultOptions | undefined): void;
  /** Serve this contract violation from now on (undefined: behave again). */
  setMisbehaviour(kind: MisbehaviourKind | undefined): void;
  /** The floor spaces whose records `strayNullHeadcount` spoils: each customer's first floor space by id. */
  strayFloorSpaceIds(): string[];
  /** Live counters. */
  stats: SandboxStats;
  webhooks(customerId: string): SandboxWebhookView[];
  /**
   * Delivers everything due at the clock's now: ticks that became visible since registration (or the last pump),
   * and retries whose backoff expired. Resolves when those attempts finished.
   */
  pumpDeliveries(): Promise<void>;
  /** Deliveries queued and not yet accepted by their receiver (awaiting an attempt or a retry). */
  pendingDeliveries(): number;
  close(): Promise<void>;
}
