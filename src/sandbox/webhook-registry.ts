import { isIP } from 'node:net';
import { GraphQLError } from 'graphql';
import { hashString, Tag, uuidFrom } from './ids.ts';
import type { SandboxWebhookView } from './interfaces.ts';
import { SENDER_HEADERS } from '../net.ts';

export const SIGNATURE_SECRET_MIN = 64;
export const SIGNATURE_SECRET_MAX = 256;

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

export interface HeaderPair {
  key: string;
  value: string;
}

export interface WebhookRecord {
  id: string;
  customerId: string;
  url: string;
  eventTypes: string[];
  additionalHeaders: HeaderPair[];
  /** Write-only: never leaves the sandbox except as the HMAC key. */
  secret: string | undefined;
  compress: boolean;
  /** Ticks that became visible up to this instant have been queued (registration time at first: no history). */
  queuedUpToMs: number;
}

export interface RegisterInput {
  url: string;
  eventTypes: string[];
  additionalHeaders?: HeaderPair[] | null;
  signatureSecret?: string | null;
  compress?: boolean | null;
}

export interface UpdateInput {
  url?: string | null;
  additionalHeaders?: HeaderPair[] | null;
  signatureSecret?: string | null;
  clearSignatureSecret?: boolean | null;
  compress?: boolean | null;
}

/**
 * What a variant calls each input field, as a path from the mutation's arguments, so an error names the field the
 * client actually sent.
 */
export interface InputNames {
  url: string;
  eventTypes: string;
  additionalHeaders: string;
  signatureSecret: string;
  clearSignatureSecret: string;
}

export const V1_INPUT_NAMES: InputNames = {
  url: 'input.url',
  eventTypes: 'input.eventTypes',
  additionalHeaders: 'input.additionalHeaders',
  signatureSecret: 'input.signatureSecret',
  clearSignatureSecret: 'input.clearSignatureSecret',
};

function inputError(field: string, message: string): GraphQLError {
  return new GraphQLError(`${field}: ${message}`, { extensions: { code: 'BAD_USER_INPUT', field } });
}

function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  if (isIP(host) === 6) return host === '::1';
  return false;
}

function checkUrl(field: string, raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw inputError(field, `${JSON.stringify(raw)} is not an absolute URL; use https://host/path`);
  }
  if (url.protocol === 'https:') return raw;
  if (url.protocol === 'http:' && isLoopback(url.hostname)) return raw;
  throw inputError(field, `the webhook endpoint must use HTTPS (plain http is accepted for loopback hosts only), got ${JSON.stringify(raw)}`);
}

function checkSecret(field: string, secret: string): string {
  if (secret.length < SIGNATURE_SECRET_MIN || secret.length > SIGNATURE_SECRET_MAX) {
    throw inputError(field, `must have ${SIGNATURE_SECRET_MIN} to ${SIGNATURE_SECRET_MAX} characters, got ${secret.length}`);
  }
  return secret;
}

function checkHeaders(field: string, headers: HeaderPair[]): HeaderPair[] {
  headers.forEach((h, i) => {
    if (!HEADER_NAME.test(h.key)) throw inputError(`${field}[${i}].key`, `${JSON.stringify(h.key)} is not a valid HTTP header name`);
    if (SENDER_HEADERS.has(h.key.toLowerCase())) {
      throw inputError(`${field}[${i}].key`, `${h.key} is set by the sender and cannot be overridden`);
    }
    if (/[\r\n\0]/.test(h.value)) throw inputError(`${field}[${i}].value`, 'must not contain CR, LF or NUL');
  });
  return headers.map((h) => ({ key: h.key, value: h.value }));
}

/** Webhooks of every customer. Each is scoped to the customer whose key registered it. */
export class WebhookRegistry {
  readonly #hooks = new Map<string, WebhookRecord>();
  readonly #seed: number;
  #counter = 0;

  constructor(seed: number) {
    this.#seed = seed;
  }

  register(customerId: string, input: RegisterInput, nowMs: number, names: InputNames = V1_INPUT_NAMES): WebhookRecord {
    const eventTypes = input.eventTypes.map((t) => t.trim()).filter(Boolean);
    if (eventTypes.length === 0) throw inputError(names.eventTypes, 'name at least one event type; Occupancy is the one delivered');
    const record: WebhookRecord = {
      id: uuidFrom([this.#seed, Tag.webhook, hashString(customerId), this.#counter++]),
      customerId,
      url: checkUrl(names.url, input.url),
      eventTypes,
      additionalHeaders: checkHeaders(names.additionalHeaders, input.additionalHeaders ?? []),
      secret: input.signatureSecret == null ? undefined : checkSecret(names.signatureSecret, input.signatureSecret),
      compress: input.compress ?? false,
      queuedUpToMs: nowMs,
    };
    this.#hooks.set(record.id, record);
    return record;
  }

  update(customerId: string, id: string, input: UpdateInput, names: InputNames = V1_INPUT_NAMES): WebhookRecord {
    const record = this.get(customerId, id);
    if (!record) throw new GraphQLError(`id: no webhook ${JSON.stringify(id)} for this customer`, { extensions: { code: 'NOT_FOUND' } });
    if (input.signatureSecret != null && input.clearSignatureSecret) {
      throw inputError(names.clearSignatureSecret, `cannot be true together with a new ${names.signatureSecret.split('.').pop()}; send one or the other`);
    }
    // Validate everything before changing anything, so a rejected update leaves the webhook as it was.
    const url = input.url == null ? record.url : checkUrl(names.url, input.url);
    const headers = input.additionalHeaders == null ? record.additionalHeaders : checkHeaders(names.additionalHeaders, input.additionalHeaders);
    const secret = input.clearSignatureSecret
      ? undefined
      : input.signatureSecret == null
        ? record.secret
        : checkSecret(names.signatureSecret, input.signatureSecret);
    record.url = url;
    record.additionalHeaders = headers;
    record.secret = secret;
    if (input.compress != null) record.compress = input.compress;
    return record;
  }

  get(customerId: string, id: string): WebhookRecord | undefined {
    const record = this.#hooks.get(id);
    return record && record.customerId === customerId ? record : undefined;
  }

  list(customerId: string): WebhookRecord[] {
    return [...this.#hooks.values()].filter((h) => h.customerId === customerId);
  }

  all(): WebhookRecord[] {
    return [...this.#hooks.values()];
  }
}

export function webhookView(record: WebhookRecord): SandboxWebhookView {
  return {
    id: record.id,
    url: record.url,
    eventTypes: [...record.eventTypes],
    additionalHeaders: record.additionalHeaders.map((h) => ({ ...h })),
    signed: record.secret !== undefined,
    compress: record.compress,
  };
}
