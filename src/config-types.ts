import type { TelemetryConfig } from './telemetry-config.ts';
import type { WorkingTime } from './config-working-time.ts';

/** The configuration's types: what resolveConfig (src/config.ts) hands everything below the CLI. */

export type Dialect = 'sqlite' | 'postgres';

export interface CustomerConfig {
  /** Customer id (UUID on the real platform); used as `customer_id` in every table. */
  id: string;
  /** A name for people (reports); the platform's API does not give one. */
  name?: string;
  /**
   * The API key and its secret; both empty for a customer configured only to receive its webhooks (CUSTOMER_ID and a
   * webhook secret or header, no API key): `requireApi` refuses such a customer for every command that calls the API.
   */
  apiKey: string;
  apiSecret: string;
  /** Accepted webhook signature secrets, newest first. Several during a rotation. Empty: deliveries are not signed. */
  webhookSecrets: string[];
  /** Until when the previous webhook secret (webhookSecrets[1]) is accepted, epoch ms; undefined: while it is set. */
  webhookPreviousSecretUntil?: number;
  /** Custom headers every delivery for this customer must carry (compared in constant time). */
  webhookHeaders: Record<string, string>;
}

/** How long a command waits for Postgres: to connect, for a lock another session holds, for one statement. */
export interface DatabaseTimeouts {
  connectMs: number;
  lockMs: number;
  statementMs: number;
}

export interface Config {
  /** OpenTelemetry tracing (the standard OTEL_* variables); undefined: off. */
  telemetry: TelemetryConfig | undefined;
  /** Base URL of the platform, e.g. https://api.example.com. Undefined when not configured (sandbox, migrate). */
  apiBaseUrl: string | undefined;
  customers: CustomerConfig[];
  database: {
    url: string;
    dialect: Dialect;
    /** SQLite file path, for the sqlite dialect. */
    sqlitePath: string | undefined;
    /** Bounds on every wait for Postgres (absent: the store's defaults, those of DATABASE_*_TIMEOUT below). */
    timeouts?: DatabaseTimeouts;
  };
  logLevel: string;
  http: { timeoutMs: number; maxAttempts: number; backoffMinMs: number; backoffMaxMs: number };
  /**
   * The API budget of each key (src/api/budget/, docs/api-client.md): how many of its queries may be in flight and
   * start per second, every process using the key together (through the database).
   */
  budget: {
    /** Adapt the in-flight limit to the platform's answers (API_IN_FLIGHT=auto), or hold it at maxInFlight. */
    adaptive: boolean;
    /** The most in flight (API_MAX_IN_FLIGHT), or the fixed limit (API_IN_FLIGHT=N). */
    maxInFlight: number;
    /** Where an adaptive limit starts for a key nothing has been learnt of. */
    startInFlight: number;
    /** API_MAX_RATE: queries per second per key; undefined: no such limit. */
    ratePerSecond: number | undefined;
  };
  token: { refreshMarginMs: number; cacheFile: string | undefined };
  sync: {
    lookbackMs: number;
    settleDelayMs: number;
    stepMs: number;
    pageSize: number;
    /** How far back the first incremental run starts when a stream has no watermark yet. */
    initialHistoryMs: number;
    buildingsNameLike: string | undefined;
    cron: string;
    /** The platform's Date header caps the watermark only while it is this close to the local clock. */
    maxClockSkewMs: number;
    /** What a record that breaks its declared types does: quarantined (the run goes on) or fails its window. */
    rejectedRecords: 'quarantine' | 'fail';
    /** A window whose rejected share exceeds this (with at least 10 rejected) fails: the API changed. */
    maxRejectedShare: number;
    /** A window needing more pages than this fails (nothing may page forever). */
    maxPagesPerWindow: number;
    /** Streams synced at once by one process (customers are independent, so one slow customer holds one slot). */
    concurrency: number;
    /**
     * Jobs of the Postgres queue one `serve` instance works at once: the same SYNC_CONCURRENCY when set, else a larger
     * default, because a job mostly waits on the API and the instance should work on other customers meanwhile.
     */
    queueConcurrency: number;
    /**
     * Windows of one stream read at the same time (SYNC_WINDOW_CONCURRENCY), each page by page: a backfill or a
     * catch-up keeps several requests in flight, within the key's API budget (API_IN_FLIGHT), once the store waits for
     * the network (src/sync/run/window-demand.ts).
     */
    windowConcurrency: number;
    /**
     * Records one stream run holds at most in pages requested and not yet committed (SYNC_MAX_PENDING_RECORDS):
     * bounds its memory whatever the page size, the windows in parallel and the API's speed.
     */
    maxPendingRecords: number;
    /**
     * Completeness alarm: the last `completenessWindowMs` before a windowed stream's watermark must hold at least this
     * share of the records of the same window a day and a week earlier (the larger). 0 turns the alarm off.
     */
    completenessMinShare: number;
    completenessWindowMs: number;
    /** Finished runs older than this are deleted by the daemons (the latest per stream always stays); 0 keeps all. */
    runHistoryRetentionMs: number;
    /**
     * Readings observed longer ago than this are deleted by the daemons (Postgres: whole month partitions dropped);
     * 0 (the default) keeps every reading.
     */
    readingsRetentionMs: number;
  };
  webhook: {
    host: string;
    port: number;
    path: string;
    toleranceMs: number;
    maxBodyBytes: number;
    maxDecompressedBytes: number;
    tlsCert: string | undefined;
    tlsKey: string | undefined;
    /** Accept deliveries of customers with neither a secret nor custom headers. Off unless asked for by name. */
    acceptUnsigned: boolean;
    /** Open connections at most; more are refused by the server. */
    maxConnections: number;
    /** Time a request may take to arrive whole (headers and body); a stalled upload is cut after it. */
    requestTimeoutMs: number;
    /** Bytes all not-yet-authenticated requests may hold at once; beyond it, 503 (the platform retries). */
    maxPendingBytes: number;
  };
  serve: { host: string; port: number };
  /**
   * Working time per building (WORKING_TIME_FILE): what the time-weighted aggregates count as working hours, and the
   * zone of a building whose platform gives none.
   */
  workingTime: WorkingTime;
  /**
   * Stream and webhook definitions a user keeps beside the installed tool (DEFINITIONS_FILE; docs/api-assumptions.md):
   * a file, or a directory holding DEFAULT_DEFINITIONS_FILE. `explicit`: named by the setting, so it must exist;
   * otherwise DEFAULT_DEFINITIONS_FILE in the working directory is read when present.
   */
  definitions: { path: string; explicit: boolean };
  metrics: {
    /** A customer label on the per-stream families of /metrics (METRICS_PER_CUSTOMER). */
    perCustomer: boolean;
    /** `sync` and `backfill` write their run's metrics here for node_exporter's textfile collector. */
    textfile: string | undefined;
  };
}

export type Env = Record<string, string | undefined>;
