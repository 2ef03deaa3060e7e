import { record, string } from 'zod';
import { HTTP_HEADER_NAME, HTTP_HEADER_VALUE, SENDER_HEADERS } from './net.ts';
import { jsonSyntaxProblem, parseJsonText } from './strict-json.ts';
import type { Config, Env } from './config-types.ts';
import { ceiling, duration, fail, flag, integer, TIMER_CEILING } from './config-parse.ts';

/**
 * The tolerance is the replay window: a delivery captured on its way stays acceptable for as long. The ceiling leaves
 * room above the platform's recommendation for a sender's clock that is off, and no more (docs/webhooks.md).
 */
export const WEBHOOK_TOLERANCE_CEILING = ceiling(
  '1h',
  'a signed delivery seen on its way could be replayed for as long; the platform recommends 5m',
  'use 300s (the default, as the platform recommends); a larger value only while a sender\'s clock is off, and fix that clock (NTP)',
);

export const WEBHOOK_SECRET_MIN = 64;
export const WEBHOOK_SECRET_MAX = 256;

export function checkWebhookSecret(variable: string, value: string): string {
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

export function parseHeaderMap(variable: string, raw: string | undefined): Record<string, string> {
  if (!raw?.trim()) return {};
  const read = parseJsonText(raw);
  if ('syntaxAt' in read) fail(variable, '(not shown)', jsonSyntaxProblem(read.syntaxAt), 'use a JSON object, e.g. {"X-Webhook-Token":"value"}');
  const result = record(string().regex(HTTP_HEADER_NAME), string()).safeParse(read.value);
  if (!result.success) {
    fail(variable, '(not shown)', 'must map header names (token characters only) to string values', 'use a JSON object, e.g. {"X-Webhook-Token":"value"}');
  }
  // A required header is what authenticates a delivery: an empty value would take unsigned deliveries without
  // WEBHOOK_ACCEPT_UNSIGNED and its warning, and one no sender can send would refuse every delivery in silence.
  for (const [name, value] of Object.entries(result.data)) {
    if (SENDER_HEADERS.has(name.toLowerCase())) fail(variable, '(not shown)', `${name} is set by the sender of every delivery and cannot be required`, 'require a header of your own, e.g. {"X-Webhook-Token":"value"}');
    if (!HTTP_HEADER_VALUE.test(value)) {
      fail(variable, '(not shown)', `the value of ${name} is ${value.trim() === '' ? 'empty' : 'not one a sender can send (visible ASCII characters, spaces inside only)'}`, `give ${name} the value set on the webhook (\`webhook register --header ${name}=VALUE\`)`);
    }
  }
  return result.data;
}

/** Where the receiver answers: WEBHOOK_PATH and the TLS pair, checked before the run's settings (as ever). */
export function webhookEndpoint(env: Env): { path: string; tlsCert: string | undefined; tlsKey: string | undefined } {
  const tlsCert = env.WEBHOOK_TLS_CERT?.trim() || undefined;
  const tlsKey = env.WEBHOOK_TLS_KEY?.trim() || undefined;
  if (!!tlsCert !== !!tlsKey) {
    fail(tlsCert ? 'WEBHOOK_TLS_KEY' : 'WEBHOOK_TLS_CERT', undefined, 'the TLS certificate and key go together', 'set both WEBHOOK_TLS_CERT and WEBHOOK_TLS_KEY, or neither');
  }
  const webhookPath = env.WEBHOOK_PATH?.trim() || '/webhook';
  if (!webhookPath.startsWith('/')) fail('WEBHOOK_PATH', webhookPath, 'must start with /', 'use e.g. /webhook');
  return { path: webhookPath, tlsCert, tlsKey };
}

/** The receiver's settings (WEBHOOK_HOST, WEBHOOK_PORT, limits and timeouts) around its endpoint. */
export function resolveWebhook(env: Env, endpoint: ReturnType<typeof webhookEndpoint>): Config['webhook'] {
  const { path: webhookPath, tlsCert, tlsKey } = endpoint;
  return {
    host: env.WEBHOOK_HOST?.trim() || '0.0.0.0',
    port: integer(env, 'WEBHOOK_PORT', 8080, 0, 65535),
    path: webhookPath,
    toleranceMs: duration(env, 'WEBHOOK_TOLERANCE', '300s', 1000, WEBHOOK_TOLERANCE_CEILING),
    maxBodyBytes: integer(env, 'WEBHOOK_MAX_BODY_BYTES', 1024 * 1024, 1024, 1024 * 1024 * 1024),
    maxDecompressedBytes: integer(env, 'WEBHOOK_MAX_DECOMPRESSED_BYTES', 16 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    tlsCert,
    tlsKey,
    acceptUnsigned: flag(env, 'WEBHOOK_ACCEPT_UNSIGNED'),
    maxConnections: integer(env, 'WEBHOOK_MAX_CONNECTIONS', 1024, 1, 1_000_000),
    requestTimeoutMs: duration(env, 'WEBHOOK_REQUEST_TIMEOUT', '15s', 1000, TIMER_CEILING),
    maxPendingBytes: integer(env, 'WEBHOOK_MAX_PENDING_BYTES', 32 * 1024 * 1024, 64 * 1024, 1024 * 1024 * 1024),
  };
}
