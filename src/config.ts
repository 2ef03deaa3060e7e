import { resolveTelemetry } from './telemetry-config.ts';
import { UsageError } from './errors.ts';
import { isLoopback, redactUrl } from './net.ts';
import type { Config, CustomerConfig, Env } from './config-types.ts';
import { fail, duration, flag, integer, textfilePath } from './config-parse.ts';
import { resolveBudget } from './config-budget.ts';
import { resolveCustomers } from './config-customers.ts';
import { resolveDatabase } from './config-database.ts';
import { resolveHttp, resolveSync } from './config-sync.ts';
import { resolveWebhook, webhookEndpoint } from './config-webhook.ts';
import { resolveWorkingTime } from './config-working-time.ts';

export type { Config, CustomerConfig, DatabaseTimeouts, Dialect, Env } from './config-types.ts';
export type { WorkingTime } from './config-working-time.ts';
export { parseDuration } from './config-parse.ts';
export { WEBHOOK_SECRET_MAX, WEBHOOK_SECRET_MIN, WEBHOOK_TOLERANCE_CEILING } from './config-webhook.ts';
export { SYNC_CEILINGS } from './config-sync.ts';

/**
 * The only place that reads the environment. Everything below the CLI receives a typed, validated `Config`.
 * Every error names the variable, the value it got (secrets masked) and how to fix it.
 *
 * resolveConfig composes one module per part: config-customers.ts, config-webhook.ts, config-database.ts,
 * config-sync.ts, config-budget.ts, over the single-variable readers of config-parse.ts.
 */

/** The definitions file looked for in the working directory, and in a directory DEFINITIONS_FILE names. */
export const DEFAULT_DEFINITIONS_FILE = 'occupancy-sync.streams.yaml';

/**
 * The configuration values a definitions file may send as `{{settings.NAME}}` (each a field of `Config['sync']`), e.g.
 * BUILDINGS_NAME_LIKE as `{{settings.buildingsNameLike}}`.
 */
export const PLACEHOLDER_SETTING_NAMES = ['buildingsNameLike'] as const;

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







const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** Resolve and validate the configuration once, at start. */
export function resolveConfig(env: Env): Config {
  const logLevel = env.LOG_LEVEL?.trim() || 'info';
  if (!LOG_LEVELS.includes(logLevel)) fail('LOG_LEVEL', logLevel, 'unknown level', `use one of ${LOG_LEVELS.join(', ')}`);

  const apiBaseUrl = env.API_BASE_URL?.trim() ? validateApiBaseUrl(env.API_BASE_URL.trim()) : undefined;
  const customers = resolveCustomers(env);
  const endpoint = webhookEndpoint(env);
  const sync = resolveSync(env);
  const http = resolveHttp(env);

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
    webhook: resolveWebhook(env, endpoint),
    definitions: env.DEFINITIONS_FILE?.trim()
      ? { path: env.DEFINITIONS_FILE.trim(), explicit: true }
      : { path: DEFAULT_DEFINITIONS_FILE, explicit: false },
    metrics: { perCustomer: flag(env, 'METRICS_PER_CUSTOMER'), textfile: textfilePath(env) },
    serve: {
      host: env.SERVE_HOST?.trim() || '0.0.0.0',
      port: integer(env, 'SERVE_PORT', 9464, 0, 65535),
    },
    workingTime: resolveWorkingTime(env),
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
