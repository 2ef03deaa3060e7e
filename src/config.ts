import { readFileSync, statSync } from 'node:fs';
// Named imports, not the `z` namespace: the bundled command then leaves out what config does not use (zod's locales
// but English, among others).
import { array, object, record, string } from 'zod';
import { resolveTelemetry, type TelemetryConfig } from './telemetry-config.ts';
import { ConfigError, UsageError } from './errors.ts';
import { maskSecret } from './logger.ts';
import { HTTP_HEADER_NAME, isLoopback, redactUrl } from './net.ts';
import { readSecretFile } from './secrets.ts';
import { parseIsoInstant } from './time.ts';

/**
 * The only place that reads the environment. Everything below the CLI receives a typed, validated `Config`.
 * Every error names the variable, the value it got (secrets masked) and how to fix it.
 */

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

/** The definitions file looked for in the working directory, and in a directory DEFINITIONS_FILE names. */
export const DEFAULT_DEFINITIONS_FILE = 'occupancy-sync.streams.yaml';
/** Records per page unless SYNC_PAGE_SIZE (or a stream's `paging.pageSize`) says otherwise. */
const DEFAULT_PAGE_SIZE = 1000;

/**
 * The configuration values a definitions file may send as `{{settings.NAME}}` (each a field of `Config['sync']`), e.g.
 * BUILDINGS_NAME_LIKE as `{{settings.buildingsNameLike}}`.
 */
export const STREAM_SETTINGS = ['buildingsNameLike'] as const;

const SECRET_VARS = new Set(['API_SECRET', 'WEBHOOK_SECRET', 'WEBHOOK_PREVIOUS_SECRET']);

function fail(variable: string, value: string | undefined, problem: string, fix: string, options?: { secret?: boolean }): never {
  const secret = options?.secret || SECRET_VARS.has(variable);
  const shown = value === undefined ? '(unset)' : secret ? maskSecret(value) : JSON.stringify(value);
  throw new ConfigError(`${variable}=${shown}: ${problem}. Fix: ${fix}`);
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** Parses `1500ms`, `60s`, `15m`, `1h`, `7d`, `2w`, or a bare number of seconds. */
export function parseDuration(text: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?\s*$/.exec(text);
  if (!match) return undefined;
  const unit = DURATION_UNITS[match[2] ?? 's']!;
  return Math.round(Number(match[1]) * unit);
}

function duration(env: Env, variable: string, fallback: string, min = 0): number {
  const raw = env[variable]?.trim() || fallback;
  const ms = parseDuration(raw);
  if (ms === undefined) fail(variable, raw, 'not a duration', `use a number with a unit, e.g. 90s, 15m, 1h, 7d or 2w`);
  if (ms < min) fail(variable, raw, `must be at least ${min} ms`, `use a larger value`);
  return ms;
}

/** A retention period: a duration of at least an hour, or `0`/`off` to keep everything (0 ms). */
function retention(env: Env, variable: string, fallback: string): number {
  const raw = env[variable]?.trim().toLowerCase();
  if (raw === '0' || raw === 'off') return 0;
  const ms = parseDuration(raw || fallback);
  if (ms === undefined || ms < 3_600_000) {
    fail(variable, env[variable], 'must be a duration of at least 1h, or off', `use e.g. ${fallback} (the default), 90d, or off to keep every run`);
  }
  return ms;
}

function integer(env: Env, variable: string, fallback: number, min: number, max: number): number {
  const raw = env[variable]?.trim();
  if (!raw) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    fail(variable, raw, `must be an integer from ${min} to ${max}`, `set ${variable} to a whole number in that range`);
  }
  return n;
}

/** An opt-in: `true` turns it on; unset or `false` leaves it off; anything else is refused. */
function flag(env: Env, variable: string): boolean {
  const raw = env[variable]?.trim().toLowerCase();
  if (!raw || raw === 'false') return false;
  if (raw === 'true') return true;
  fail(variable, env[variable], 'must be true or false', `set ${variable}=true to turn it on, or leave it unset`);
}

/** METRICS_TEXTFILE: node_exporter's textfile collector reads only files ending in .prom. */
function textfilePath(env: Env): string | undefined {
  const raw = env.METRICS_TEXTFILE?.trim();
  if (!raw) return undefined;
  if (!raw.endsWith('.prom')) fail('METRICS_TEXTFILE', raw, 'must end in .prom (the textfile collector reads only those)', 'use e.g. /var/lib/node_exporter/textfile/occupancy_sync.prom');
  return raw;
}

/** An ISO 8601 instant with a zone (strict: the date must exist). */
function instant(variable: string, text: string): number {
  const ms = parseIsoInstant(text);
  if (ms === undefined) fail(variable, text, 'not an ISO 8601 date-time with a zone', 'use e.g. 2026-03-01T12:00:00Z');
  return ms;
}

function share(env: Env, variable: string, fallback: number): number {
  const raw = env[variable]?.trim();
  if (!raw) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0 || n > 1) fail(variable, raw, 'must be a share from 0 to 1', `set ${variable} to e.g. 0.5 (half)`);
  return n;
}

function oneOf<T extends string>(env: Env, variable: string, values: readonly T[], fallback: T): T {
  const raw = env[variable]?.trim();
  if (!raw) return fallback;
  if (!(values as readonly string[]).includes(raw)) fail(variable, raw, `must be one of ${values.join(', ')}`, `set ${variable}=${fallback} (the default) or another of those values`);
  return raw as T;
}

/** Where an adaptive in-flight limit starts: moderate, found up or down from there (src/api/budget/aimd.ts). */
const START_IN_FLIGHT = 8;

/** API_IN_FLIGHT (auto or a fixed N), API_MAX_IN_FLIGHT and API_MAX_RATE. */
function resolveBudget(env: Env): Config['budget'] {
  const maxInFlight = integer(env, 'API_MAX_IN_FLIGHT', 32, 1, 1024);
  const mode = env.API_IN_FLIGHT?.trim().toLowerCase() || 'auto';
  let fixed: number | undefined;
  if (mode !== 'auto') {
    fixed = Number(mode);
    if (!Number.isInteger(fixed) || fixed < 1 || fixed > 1024) {
      fail('API_IN_FLIGHT', env.API_IN_FLIGHT, 'must be auto or a whole number from 1 to 1024', 'leave it unset (auto: adapt to the platform) or set the number of queries per key the platform allows in flight');
    }
    if (env.API_MAX_IN_FLIGHT?.trim() && fixed > maxInFlight) {
      fail('API_IN_FLIGHT', env.API_IN_FLIGHT, `is above API_MAX_IN_FLIGHT=${maxInFlight}`, 'lower API_IN_FLIGHT, or unset API_MAX_IN_FLIGHT (it only bounds auto)');
    }
  }
  const rateText = env.API_MAX_RATE?.trim().toLowerCase();
  let ratePerSecond: number | undefined;
  if (rateText && rateText !== 'off') {
    ratePerSecond = Number(rateText);
    if (!Number.isFinite(ratePerSecond) || ratePerSecond <= 0 || ratePerSecond > 10_000) {
      fail('API_MAX_RATE', env.API_MAX_RATE, 'must be off or a number of queries per second above 0 (up to 10000)', 'set e.g. API_MAX_RATE=10 (or 0.5 for one every two seconds), or off');
    }
  }
  return fixed === undefined
    ? { adaptive: true, maxInFlight, startInFlight: Math.min(START_IN_FLIGHT, maxInFlight), ratePerSecond }
    : { adaptive: false, maxInFlight: fixed, startInFlight: fixed, ratePerSecond };
}

/** The platform's customer ids are UUIDs (API document, 2.6); anything else is a typo that would file data wrongly. */
const CUSTOMER_ID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

function customerId(variable: string, value: string): string {
  if (!CUSTOMER_ID.test(value)) {
    fail(variable, value, 'not a customer id (the platform\'s customer ids are UUIDs, e.g. 6f1c0d2e-8a4b-4c1d-9e2f-0123456789ab)', 'copy the customer id from the Admin Console (Open as Customer) or from `occupancy-sync check`');
  }
  return value;
}

/** HTTPS only; plain http only for loopback hosts (the sandbox). */
export function validateApiBaseUrl(input: string, variable = 'API_BASE_URL'): string {
  const raw = redactUrl(input);
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    fail(variable, raw, 'not a URL', 'use the platform base URL, e.g. https://api.example.com');
  }
  if (url.username || url.password) {
    fail(variable, raw, 'must not carry credentials', 'remove user:password@ from the URL: the API authenticates with API_KEY and API_SECRET');
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url.hostname))) {
    fail(
      variable,
      raw,
      'the API must be reached over HTTPS (plain http is only allowed for loopback addresses such as the sandbox)',
      'use an https:// URL',
    );
  }
  if (url.search || url.hash) fail(variable, raw, 'must not have a query or fragment', 'remove everything after the path');
  return url.toString().replace(/\/+$/, '');
}

/** A secret may come inline (`NAME`) or from a file (`NAME_FILE`, for systemd credentials and Docker secrets). */
function secretFrom(env: Env, variable: string): string | undefined {
  const file = env[`${variable}_FILE`]?.trim();
  if (file) return readSecretFile(file, (problem, fix) => fail(`${variable}_FILE`, file, problem, fix));
  const value = env[variable];
  return value ? value.trim() : undefined;
}

export const WEBHOOK_SECRET_MIN = 64;
export const WEBHOOK_SECRET_MAX = 256;

function checkWebhookSecret(variable: string, value: string): string {
  if (value.length < WEBHOOK_SECRET_MIN || value.length > WEBHOOK_SECRET_MAX) {
    fail(
      variable,
      value,
      `a webhook signature secret has ${WEBHOOK_SECRET_MIN} to ${WEBHOOK_SECRET_MAX} characters`,
      'use the secret exactly as set on the webhook (`occupancy-sync webhook update --rotate-secret` makes one)',
      { secret: true },
    );
  }
  return value;
}


function parseHeaderMap(variable: string, raw: string | undefined): Record<string, string> {
  if (!raw?.trim()) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    fail(variable, '(not shown)', 'not valid JSON', 'use a JSON object, e.g. {"X-Webhook-Token":"value"}');
  }
  const result = record(string().regex(HTTP_HEADER_NAME), string()).safeParse(parsed);
  if (!result.success) {
    fail(variable, '(not shown)', 'must map header names (token characters only) to string values', 'use a JSON object, e.g. {"X-Webhook-Token":"value"}');
  }
  return result.data;
}

/** Printed in every report format, a terminal included: no control characters, not a page of text. */
const CUSTOMER_NAME = /^[^\p{Cc}]{1,200}$/u;

function customerName(variable: string, text: string | undefined): string | undefined {
  const name = text?.trim();
  if (!name) return undefined;
  if (!CUSTOMER_NAME.test(name)) fail(variable, name.slice(0, 40), 'must be 1 to 200 characters without control characters', 'use a plain name such as "Head office"');
  return name;
}

const customerFileSchema = array(
  object({
    id: string().min(1),
    /** A name for reports. */
    name: string().regex(CUSTOMER_NAME, 'must be 1 to 200 characters without control characters').optional(),
    /** Absent for a customer whose webhooks are only received here (no sync). */
    apiKey: string().min(1).optional(),
    /** Name of an environment variable holding the secret. */
    apiSecretEnv: string().min(1).optional(),
    /** Path of a file (mode 0600) holding the secret. */
    apiSecretFile: string().min(1).optional(),
    webhookSecretEnv: string().min(1).optional(),
    webhookSecretFile: string().min(1).optional(),
    webhookPreviousSecretEnv: string().min(1).optional(),
    webhookPreviousSecretFile: string().min(1).optional(),
    /** ISO 8601 instant after which the previous webhook secret is no longer accepted. */
    webhookPreviousSecretUntil: string().min(1).optional(),
    webhookHeaders: record(string().regex(HTTP_HEADER_NAME, 'not a valid HTTP header name'), string()).optional(),
  }).strict(),
);

/** The customers of CUSTOMERS_FILE, and the environment variables its entries take secrets from. */
function loadCustomersFile(env: Env, path: string): { customers: CustomerConfig[]; variables: Set<string> } {
  let raw: string;
  try {
    raw = readFileSync(path, 'utf8');
  } catch (error) {
    fail('CUSTOMERS_FILE', path, `cannot read the file (${(error as NodeJS.ErrnoException).code ?? 'error'})`, 'point it at a JSON customers file (see .env.example)');
  }
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (error) {
    fail('CUSTOMERS_FILE', path, `not valid JSON (${(error as Error).message})`, 'fix the JSON syntax');
  }
  if (JSON.stringify(json).match(/"(apiSecret|webhookSecret|secret)"\s*:/)) {
    fail('CUSTOMERS_FILE', path, 'holds a secret inline', 'keep secrets out of this file: use apiSecretEnv/apiSecretFile and webhookSecretEnv/webhookSecretFile');
  }
  const parsed = customerFileSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    fail('CUSTOMERS_FILE', path, `entry ${issue.path.join('.')}: ${issue.message}`, 'each entry needs id, and apiKey with apiSecretEnv or apiSecretFile to sync');
  }
  const seen = new Set<string>();
  const variables = new Set(parsed.data.flatMap((e) => [e.apiSecretEnv, e.webhookSecretEnv, e.webhookPreviousSecretEnv].filter((v): v is string => !!v)));
  const customers = parsed.data.map((entry, index) => {
    const where = `CUSTOMERS_FILE entry ${index} (${entry.id})`;
    const id = customerId(`${where} id`, entry.id);
    if (seen.has(id)) fail('CUSTOMERS_FILE', path, `customer ${entry.id} is listed twice`, 'list each customer once');
    seen.add(id);
    const fromEnvOrFile = (envName: string | undefined, file: string | undefined, label: string): string | undefined => {
      if (file) return readSecretFile(file, (problem, fix) => fail(`${where} ${label}File`, file, problem, fix));
      if (envName) {
        const value = env[envName];
        if (!value) fail(envName, undefined, `${where} takes its ${label} from this variable, which is empty`, `export ${envName}`);
        return value.trim();
      }
      return undefined;
    };
    const apiSecret = fromEnvOrFile(entry.apiSecretEnv, entry.apiSecretFile, 'apiSecret');
    if (entry.apiKey !== undefined && !apiSecret) fail('CUSTOMERS_FILE', path, `${where} has an apiKey but no apiSecretEnv or apiSecretFile`, 'add one of them');
    if (entry.apiKey === undefined && apiSecret) fail('CUSTOMERS_FILE', path, `${where} has an API secret but no apiKey`, 'add the key name as apiKey');
    const secrets = [
      fromEnvOrFile(entry.webhookSecretEnv, entry.webhookSecretFile, 'webhookSecret'),
      fromEnvOrFile(entry.webhookPreviousSecretEnv, entry.webhookPreviousSecretFile, 'webhookPreviousSecret'),
    ].filter((s): s is string => !!s);
    for (const s of secrets) checkWebhookSecret(`${where} webhook secret`, s);
    const until = entry.webhookPreviousSecretUntil === undefined ? undefined : instant(`${where} webhookPreviousSecretUntil`, entry.webhookPreviousSecretUntil);
    return {
      id,
      ...(entry.name !== undefined && { name: entry.name }),
      apiKey: entry.apiKey ?? '',
      apiSecret: apiSecret ?? '',
      webhookSecrets: secrets,
      ...(until !== undefined && { webhookPreviousSecretUntil: until }),
      webhookHeaders: entry.webhookHeaders ?? {},
    };
  });
  return { customers, variables };
}

function resolveDatabase(env: Env): Config['database'] {
  const url = env.DATABASE_URL?.trim() || 'file:./data/occupancy.db';
  const shown = redactUrl(url);
  if (/^postgres(ql)?:\/\//.test(url)) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(url);
    } catch {
      fail('DATABASE_URL', shown, 'not a valid postgres:// URL', 'use postgres://user@host:5432/database');
    }
    // Without a host or a database name, libpq defaults (the local socket, a database named after the OS user) would
    // decide where the data goes: never a guess for the database users report from.
    if (!parsed.hostname) fail('DATABASE_URL', shown, 'names no host', 'use postgres://user@host:5432/database');
    if (parsed.pathname.replace(/^\//, '') === '') fail('DATABASE_URL', shown, 'names no database', 'add the database name, e.g. postgres://user@host:5432/occupancy');
    // Postgres only: SQLite waits for a lock its busy timeout (5 s), and a statement there runs in this process.
    const timeouts: DatabaseTimeouts = {
      connectMs: duration(env, 'DATABASE_CONNECT_TIMEOUT', '10s', 1000),
      lockMs: duration(env, 'DATABASE_LOCK_TIMEOUT', '30s', 1000),
      statementMs: duration(env, 'DATABASE_STATEMENT_TIMEOUT', '5m', 1000),
    };
    return { url, dialect: 'postgres', sqlitePath: undefined, timeouts };
  }
  if (url.startsWith('file:')) {
    const path = url.slice('file:'.length);
    if (!path) fail('DATABASE_URL', url, 'the SQLite file path is empty', 'use file:./data/occupancy.db');
    return { url, dialect: 'sqlite', sqlitePath: path };
  }
  fail('DATABASE_URL', shown, 'unknown database', 'use file:<path> for SQLite or postgres://user@host:5432/db for Postgres');
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** Resolve and validate the configuration once, at start. */
export function resolveConfig(env: Env): Config {
  const logLevel = env.LOG_LEVEL?.trim() || 'info';
  if (!LOG_LEVELS.includes(logLevel)) fail('LOG_LEVEL', logLevel, 'unknown level', `use one of ${LOG_LEVELS.join(', ')}`);

  const apiBaseUrl = env.API_BASE_URL?.trim() ? validateApiBaseUrl(env.API_BASE_URL.trim()) : undefined;

  let customers: CustomerConfig[];
  const customersFile = env.CUSTOMERS_FILE?.trim();
  if (customersFile) {
    if (env.API_KEY || env.API_SECRET) {
      fail('CUSTOMERS_FILE', customersFile, 'set together with API_KEY/API_SECRET', 'use either CUSTOMERS_FILE (several customers) or API_KEY, API_SECRET and CUSTOMER_ID (one)');
    }
    const file = loadCustomersFile(env, customersFile);
    // With a customers file each entry names its own webhook secrets and headers: the single-customer variables would
    // be silently ignored, and the receiver would refuse every delivery signed with them.
    for (const variable of ['WEBHOOK_SECRET', 'WEBHOOK_SECRET_FILE', 'WEBHOOK_PREVIOUS_SECRET', 'WEBHOOK_PREVIOUS_SECRET_FILE', 'WEBHOOK_REQUIRED_HEADERS']) {
      if (env[variable]?.trim() && !file.variables.has(variable)) {
        fail(variable, env[variable], 'set together with CUSTOMERS_FILE, which names each customer\'s own webhook secrets and headers', 'move it into the customers file (webhookSecretEnv or webhookSecretFile, webhookPreviousSecretEnv or webhookPreviousSecretFile, webhookHeaders) and unset it', { secret: !variable.endsWith('_FILE') });
      }
    }
    customers = file.customers;
  } else {
    const apiKey = env.API_KEY?.trim();
    const apiSecret = secretFrom(env, 'API_SECRET');
    const webhookSecrets = [secretFrom(env, 'WEBHOOK_SECRET'), secretFrom(env, 'WEBHOOK_PREVIOUS_SECRET')]
      .filter((s): s is string => !!s)
      .map((s, i) => checkWebhookSecret(i === 0 ? 'WEBHOOK_SECRET' : 'WEBHOOK_PREVIOUS_SECRET', s));
    const rawId = env.CUSTOMER_ID?.trim();
    const webhookHeaders = parseHeaderMap('WEBHOOK_REQUIRED_HEADERS', env.WEBHOOK_REQUIRED_HEADERS);
    if (apiKey || apiSecret) {
      if (!apiKey) fail('API_KEY', undefined, 'API_SECRET is set but API_KEY is not', 'set API_KEY to the key name from the Admin Console');
      if (!apiSecret) fail('API_SECRET', undefined, 'API_KEY is set but API_SECRET is not', 'set API_SECRET (or API_SECRET_FILE) to the secret shown when the key was created');
      if (!rawId) fail('CUSTOMER_ID', undefined, 'required with API_KEY', 'set CUSTOMER_ID to the customer the key belongs to');
    } else if (!rawId && (webhookSecrets.length > 0 || Object.keys(webhookHeaders).length > 0)) {
      // A receiver alone needs no API key, but it files every delivery under a customer.
      const what = webhookSecrets.length > 0 ? 'WEBHOOK_SECRET' : 'WEBHOOK_REQUIRED_HEADERS';
      fail('CUSTOMER_ID', undefined, `required with ${what}: the receiver files each delivery under the customer its webhook belongs to`, 'set CUSTOMER_ID to that customer\'s id (no API key is needed only to receive webhooks)');
    }
    if (rawId) {
      const id = customerId('CUSTOMER_ID', rawId);
      const name = customerName('CUSTOMER_NAME', env.CUSTOMER_NAME);
      const untilText = env.WEBHOOK_PREVIOUS_SECRET_UNTIL?.trim();
      const until = untilText ? instant('WEBHOOK_PREVIOUS_SECRET_UNTIL', untilText) : undefined;
      customers = [
        {
          id,
          ...(name !== undefined && { name }),
          // Empty without API_KEY: a customer whose webhooks are only received (requireApi says what is missing).
          apiKey: apiKey ?? '',
          apiSecret: apiSecret ?? '',
          webhookSecrets,
          ...(until !== undefined && { webhookPreviousSecretUntil: until }),
          webhookHeaders,
        },
      ];
    } else {
      customers = [];
    }
  }

  const tlsCert = env.WEBHOOK_TLS_CERT?.trim() || undefined;
  const tlsKey = env.WEBHOOK_TLS_KEY?.trim() || undefined;
  if (!!tlsCert !== !!tlsKey) {
    fail(tlsCert ? 'WEBHOOK_TLS_KEY' : 'WEBHOOK_TLS_CERT', undefined, 'the TLS certificate and key go together', 'set both WEBHOOK_TLS_CERT and WEBHOOK_TLS_KEY, or neither');
  }
  const webhookPath = env.WEBHOOK_PATH?.trim() || '/webhook';
  if (!webhookPath.startsWith('/')) fail('WEBHOOK_PATH', webhookPath, 'must start with /', 'use e.g. /webhook');

  const cron = env.SYNC_CRON?.trim() || '*/5 * * * *';

  const pageSize = integer(env, 'SYNC_PAGE_SIZE', DEFAULT_PAGE_SIZE, 1, 5000);
  const windowConcurrency = integer(env, 'SYNC_WINDOW_CONCURRENCY', 8, 1, 64);
  // Two pages per window (one committing, the next in flight) at the default page size; never below two pages of the
  // configured size, so a larger SYNC_PAGE_SIZE alone still keeps a page in flight while one commits.
  const maxPendingRecords = integer(env, 'SYNC_MAX_PENDING_RECORDS', Math.max(2 * DEFAULT_PAGE_SIZE * windowConcurrency, 2 * pageSize), 1, 100_000_000);
  if (maxPendingRecords < pageSize) {
    fail('SYNC_MAX_PENDING_RECORDS', env.SYNC_MAX_PENDING_RECORDS, `below SYNC_PAGE_SIZE=${pageSize}: not even one page would fit`, `set it to at least ${pageSize} (twice that keeps a page in flight while one commits), or unset it`);
  }

  const sync = {
    lookbackMs: duration(env, 'SYNC_LOOKBACK', '15m'),
    settleDelayMs: duration(env, 'SYNC_SETTLE_DELAY', '60s'),
    stepMs: duration(env, 'SYNC_STEP', '1h', 60_000),
    pageSize,
    initialHistoryMs: duration(env, 'SYNC_INITIAL_HISTORY', '7d', 60_000),
    buildingsNameLike: env.BUILDINGS_NAME_LIKE?.trim() || undefined,
    cron,
    maxClockSkewMs: duration(env, 'SYNC_MAX_CLOCK_SKEW', '5m'),
    rejectedRecords: oneOf(env, 'SYNC_REJECTED_RECORDS', ['quarantine', 'fail'] as const, 'quarantine'),
    maxRejectedShare: share(env, 'SYNC_MAX_REJECTED_SHARE', 0.5),
    maxPagesPerWindow: integer(env, 'SYNC_MAX_PAGES_PER_WINDOW', 10_000, 1, 10_000_000),
    concurrency: integer(env, 'SYNC_CONCURRENCY', 4, 1, 256),
    queueConcurrency: integer(env, 'SYNC_CONCURRENCY', 32, 1, 256),
    windowConcurrency,
    maxPendingRecords,
    completenessMinShare: share(env, 'COMPLETENESS_MIN_SHARE', 0.5),
    completenessWindowMs: duration(env, 'COMPLETENESS_WINDOW', '1h', 60_000),
    runHistoryRetentionMs: retention(env, 'RUN_HISTORY_RETENTION', '28d'),
  };

  const http = {
    timeoutMs: duration(env, 'HTTP_TIMEOUT', '30s', 100),
    maxAttempts: integer(env, 'HTTP_MAX_ATTEMPTS', 6, 1, 50),
    backoffMinMs: duration(env, 'HTTP_BACKOFF_MIN', '500ms'),
    backoffMaxMs: duration(env, 'HTTP_BACKOFF_MAX', '30s'),
  };
  if (http.backoffMaxMs < http.backoffMinMs) {
    fail('HTTP_BACKOFF_MAX', env.HTTP_BACKOFF_MAX, 'smaller than HTTP_BACKOFF_MIN', 'make HTTP_BACKOFF_MAX at least HTTP_BACKOFF_MIN');
  }

  return {
    telemetry: resolveTelemetry(env),
    apiBaseUrl,
    customers,
    database: resolveDatabase(env),
    logLevel,
    http,
    budget: resolveBudget(env),
    token: {
      refreshMarginMs: duration(env, 'TOKEN_REFRESH_MARGIN', '5m'),
      cacheFile: env.TOKEN_CACHE_FILE?.trim() || undefined,
    },
    sync,
    webhook: {
      host: env.WEBHOOK_HOST?.trim() || '0.0.0.0',
      port: integer(env, 'WEBHOOK_PORT', 8080, 0, 65535),
      path: webhookPath,
      toleranceMs: duration(env, 'WEBHOOK_TOLERANCE', '300s', 1000),
      maxBodyBytes: integer(env, 'WEBHOOK_MAX_BODY_BYTES', 1024 * 1024, 1024, 1024 * 1024 * 1024),
      maxDecompressedBytes: integer(env, 'WEBHOOK_MAX_DECOMPRESSED_BYTES', 16 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
      tlsCert,
      tlsKey,
      acceptUnsigned: flag(env, 'WEBHOOK_ACCEPT_UNSIGNED'),
      maxConnections: integer(env, 'WEBHOOK_MAX_CONNECTIONS', 1024, 1, 1_000_000),
      requestTimeoutMs: duration(env, 'WEBHOOK_REQUEST_TIMEOUT', '15s', 1000),
      maxPendingBytes: integer(env, 'WEBHOOK_MAX_PENDING_BYTES', 32 * 1024 * 1024, 64 * 1024, 1024 * 1024 * 1024),
    },
    definitions: env.DEFINITIONS_FILE?.trim()
      ? { path: env.DEFINITIONS_FILE.trim(), explicit: true }
      : { path: DEFAULT_DEFINITIONS_FILE, explicit: false },
    metrics: { perCustomer: flag(env, 'METRICS_PER_CUSTOMER'), textfile: textfilePath(env) },
    serve: {
      host: env.SERVE_HOST?.trim() || '0.0.0.0',
      port: integer(env, 'SERVE_PORT', 9464, 0, 65535),
    },
  };
}

/** For commands that talk to the API: fails with a precise message when the API is not configured. */
export function requireApi(config: Config): { apiBaseUrl: string; customers: CustomerConfig[] } {
  if (!config.apiBaseUrl) {
    fail('API_BASE_URL', undefined, 'required for this command', 'set API_BASE_URL to the platform base URL (or http://127.0.0.1:4000 for `occupancy-sync sandbox`)');
  }
  if (config.customers.length === 0) {
    fail('API_KEY', undefined, 'no customer configured', 'set API_KEY, API_SECRET and CUSTOMER_ID, or CUSTOMERS_FILE for several customers');
  }
  const keyless = config.customers.find((c) => !c.apiKey);
  if (keyless) {
    fail(
      'API_KEY',
      undefined,
      `customer ${keyless.id} has no API key, and this command calls the API (receiving its webhooks with \`webhook serve\` needs none)`,
      'set API_KEY and API_SECRET (or API_SECRET_FILE) to a key of that customer (with CUSTOMERS_FILE: apiKey and apiSecretEnv or apiSecretFile in its entry)',
    );
  }
  return { apiBaseUrl: config.apiBaseUrl, customers: config.customers };
}

/** Narrows the customers to the one named by --customer, with a clear error when it is unknown. */
export function selectCustomers(config: Config, customerId: string | undefined): CustomerConfig[] {
  if (!customerId) return config.customers;
  const match = config.customers.filter((c) => c.id === customerId);
  if (match.length === 0) {
    throw new UsageError(
      `--customer ${JSON.stringify(customerId)}: no such customer is configured. Fix: use one of ${config.customers.map((c) => c.id).join(', ') || '(none configured)'}`,
    );
  }
  return match;
}

/** All secret values in the config, to register with the log scrubber. */
export function configSecrets(config: Config): string[] {
  return [...config.customers.flatMap((c) => [c.apiSecret, ...c.webhookSecrets, ...Object.values(c.webhookHeaders)]), ...Object.values(config.telemetry?.headers ?? {})];
}
