import type { IncomingHttpHeaders } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { decodeJwtClaims } from '../api/jwt.ts';
import type { CustomerConfig } from '../config.ts';
import { encodingsOf, SecretRegistry } from '../secrets.ts';
import {
  AUTH_PATH,
  KEY_PSEUDONYM_PREFIX,
  QUERY_PATH,
  redactSecretFields,
  removedText,
  type Endpoint,
  type FailureStage,
  type RecordedExchange,
  type RecordedKey,
  type Removal,
} from '../sandbox/replay-format.ts';

/**
 * What leaves the recorder goes through here: an exchange as the proxy saw it becomes one that holds no key, secret,
 * token or signature in any form. Two passes:
 * 1. by place: the auth body's ApiKey (a pseudonym, `recorded-key-N`, so a replay can tell keys apart) and ApiSecret,
 *    the idToken of auth answers (its readable claims kept apart), Authorization and other credential headers,
 *    secret fields of bodies (signatureSecret, additionalHeaders values, ...: replay-format.ts SECRET_FIELDS);
 * 2. everywhere: every value pass 1 found, and every secret of the configuration, in every encoding a text can carry
 *    it in (as is, JSON-escaped, URL-encoded, base64, base64url, hex) and any cut of 12+ characters of those
 *    (src/secrets.ts), and anything shaped like a JWT, in every string of the exchange.
 */

/** Claims a client reads from a token (src/api/jwt.ts): the customer, the scopes, the lifetime. Others are dropped. */
const KEPT_CLAIMS = new Set([
  'exp',
  'iat',
  'nbf',
  'customerId',
  'customer_id',
  'customer',
  'cid',
  'tenantId',
  'tenant_id',
  'tid',
  'scopes',
  'scope',
  'scp',
  'permissions',
]);

const JWT = /eyJ[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*/g;
/** Headers that carry credentials; their values never reach a recording. */
const CREDENTIAL_HEADERS: Readonly<Record<string, string>> = {
  cookie: 'cookie',
  'set-cookie': 'cookie',
  'proxy-authorization': 'proxy credentials',
  'x-service-signature': 'webhook signature',
  'x-api-key': 'API key',
};
/** Connection-level headers, or ones the recording states otherwise (wireBytes). */
const DROPPED_HEADERS = new Set(['host', 'connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'content-length']);

const MAX_DECODED_BYTES = 256 * 1024 * 1024;

/** An exchange as the proxy saw it: bytes on the wire, nothing removed yet. */
export interface CapturedExchange {
  seq: number;
  startedAt: number;
  durationMs: number;
  request: { method: string; path: string; headers: IncomingHttpHeaders; body: Buffer };
  response?: { status: number; headers: IncomingHttpHeaders; wire: Buffer };
  failure?: { stage: FailureStage; message: string };
}

const hexForms = (value: string): string[] => {
  const hex = Buffer.from(value, 'utf8').toString('hex');
  return [hex, hex.toUpperCase()];
};

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export class RecordingRedactor {
  readonly #secrets = new SecretRegistry();
  /** Real key -> pseudonym. */
  readonly #keys = new Map<string, string>();
  readonly #keyCustomers = new Map<string, string | null>();
  /** Token -> its label (`token 2 of recorded-key-1`) and key. */
  readonly #tokens = new Map<string, { label: string; key: string }>();
  readonly #tokensPerKey = new Map<string, number>();
  readonly #counts = new Map<string, number>();
  /** Forms of each key, longest first, each replaced by the key's pseudonym. */
  #keyForms: Array<[form: string, pseudonym: string]> = [];

  constructor(customers: ReadonlyArray<Pick<CustomerConfig, 'id' | 'apiKey' | 'apiSecret' | 'webhookSecrets' | 'webhookHeaders'>>) {
    for (const c of customers) {
      this.keyFor(c.apiKey, c.id);
      this.#secret(c.apiSecret);
      for (const s of c.webhookSecrets) this.#secret(s);
      for (const v of Object.values(c.webhookHeaders)) this.#secret(v);
    }
  }

  /** The pseudonym of an API key (a new one for a key the configuration did not name). */
  keyFor(apiKey: string, customerId: string | null = null): string {
    let pseudonym = this.#keys.get(apiKey);
    if (pseudonym === undefined) {
      pseudonym = `${KEY_PSEUDONYM_PREFIX}${this.#keys.size + 1}`;
      this.#keys.set(apiKey, pseudonym);
      this.#keyCustomers.set(pseudonym, customerId);
      // Keys shorter than this would replace ordinary words; they are still removed from auth bodies by place.
      if (apiKey.length >= 4) {
        for (const form of [...encodingsOf(apiKey), ...hexForms(apiKey)]) this.#keyForms.push([form, pseudonym]);
        this.#keyForms.sort((a, b) => b[0].length - a[0].length);
      }
      this.#secret(apiKey);
    }
    return pseudonym;
  }

  keys(): RecordedKey[] {
    return [...this.#keyCustomers].map(([key, customerId]) => ({ key, customerId }));
  }

  /** Registers a secret in all its forms (src/secrets.ts knows the text encodings; hex is added here). */
  #secret(value: string | undefined): void {
    if (!value) return;
    this.#secrets.add(value);
    for (const form of hexForms(value)) this.#secrets.add(form);
  }

  #count(what: string, n = 1): void {
    this.#counts.set(what, (this.#counts.get(what) ?? 0) + n);
  }

  /** Pass 2 on one text: JWTs, key forms, then every registered secret. */
  scrub(text: string): string {
    let out = text.replace(JWT, () => {
      this.#count('JWT');
      return removedText('a JWT');
    });
    for (const [form, pseudonym] of this.#keyForms) {
      if (!out.includes(form)) continue;
      const parts = out.split(form);
      this.#count('API key', parts.length - 1);
      out = parts.join(pseudonym);
    }
    const scrubbed = this.#secrets.scrub(out);
    if (scrubbed !== out) this.#count('secret elsewhere');
    return scrubbed;
  }

  /** Pass 2 on every string of a JSON value, keys included, so the result is still the same JSON shape. */
  #scrubDeep(value: unknown): unknown {
    if (typeof value === 'string') return this.scrub(value);
    if (Array.isArray(value)) return value.map((v) => this.#scrubDeep(v));
    if (typeof value !== 'object' || value === null) return value;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [this.scrub(k), this.#scrubDeep(v)]));
  }

  #fields(value: unknown): unknown {
    return redactSecretFields(value, (secret, what) => {
      this.#secret(secret);
      this.#count(what);
    });
  }

  #headers(headers: IncomingHttpHeaders, bearerLabel: string | undefined): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [name, raw] of Object.entries(headers)) {
      if (raw === undefined || DROPPED_HEADERS.has(name)) continue;
      const value = Array.isArray(raw) ? raw.join(', ') : raw;
      if (name === 'authorization') {
        const token = /^Bearer\s+(\S+)$/i.exec(value)?.[1];
        if (token !== undefined) this.#secret(token);
        out[name] = token !== undefined ? `Bearer ${removedText(bearerLabel ?? 'a token')}` : removedText('credentials');
        this.#count('Authorization header');
      } else if (CREDENTIAL_HEADERS[name] !== undefined) {
        for (const v of Array.isArray(raw) ? raw : [raw]) this.#secret(v);
        out[name] = removedText(CREDENTIAL_HEADERS[name]);
        this.#count(`${name} header`);
      } else {
        out[name] = value;
      }
    }
    return out;
  }

  /** Pass 1 and 2 on one exchange. */
  redact(captured: CapturedExchange): RecordedExchange {
    const path = captured.request.path.split('?')[0]!;
    const endpoint: Endpoint = path === AUTH_PATH ? 'auth' : path === QUERY_PATH ? 'query' : 'other';
    let key: string | null = null;
    let bearerLabel: string | undefined;

    const requestText = captured.request.body.toString('utf8');
    let requestBody = requestText === '' ? undefined : parseJson(requestText);
    if (endpoint === 'auth' && typeof requestBody === 'object' && requestBody !== null && !Array.isArray(requestBody)) {
      const auth = { ...(requestBody as Record<string, unknown>) };
      if (typeof auth.ApiKey === 'string') {
        key = this.keyFor(auth.ApiKey);
        auth.ApiKey = key;
        this.#count('API key');
      }
      requestBody = auth;
    } else if (endpoint !== 'auth') {
      const bearer = /^Bearer\s+(\S+)$/i.exec(String(captured.request.headers.authorization ?? ''))?.[1];
      const owner = bearer === undefined ? undefined : this.#tokens.get(bearer);
      key = owner?.key ?? null;
      bearerLabel = owner?.label;
    }
    requestBody = this.#fields(requestBody);

    const { response, token, failure } = captured.response
      ? this.#response(captured.response, endpoint, key, captured.failure)
      : { response: undefined, token: undefined, failure: captured.failure };

    const exchange: RecordedExchange = {
      seq: captured.seq,
      endpoint,
      key,
      startedAt: new Date(captured.startedAt).toISOString(),
      durationMs: Math.round(captured.durationMs * 10) / 10,
      request: {
        method: captured.request.method,
        path: captured.request.path,
        headers: this.#headers(captured.request.headers, bearerLabel),
        ...(requestBody !== undefined ? { body: requestBody } : requestText !== '' ? { bodyText: requestText } : {}),
      },
      ...(response && { response }),
      ...(token && { token }),
      ...(failure && { failure }),
    };
    return this.#scrubDeep(exchange) as RecordedExchange;
  }

  /** An answer decoded, its token (on the auth endpoint) recorded by its label and removed, its fields scrubbed. */
  #response(
    r: NonNullable<CapturedExchange['response']>,
    endpoint: Endpoint,
    key: string | null,
    captured: CapturedExchange['failure'],
  ): { response: RecordedExchange['response']; token: RecordedExchange['token']; failure: CapturedExchange['failure'] } {
    let token: RecordedExchange['token'];
    let failure = captured;
    const contentEncoding = String(r.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
    let decoded: Buffer | undefined;
    try {
      decoded = /gzip/.test(contentEncoding) ? gunzipSync(r.wire, { maxOutputLength: MAX_DECODED_BYTES }) : r.wire;
    } catch (error) {
      decoded = undefined;
      failure ??= { stage: 'body', message: `the ${contentEncoding} body could not be decoded (${(error as Error).message})` };
    }
    const text = decoded?.toString('utf8') ?? '';
    let body = text === '' ? undefined : parseJson(text);
    if (endpoint === 'auth' && key !== null && typeof body === 'object' && body !== null && !Array.isArray(body) && typeof (body as { idToken?: unknown }).idToken === 'string') {
      const idToken = (body as { idToken: string }).idToken;
      const n = (this.#tokensPerKey.get(key) ?? 0) + 1;
      this.#tokensPerKey.set(key, n);
      const label = `token ${n} of ${key}`;
      this.#tokens.set(idToken, { label, key });
      this.#secret(idToken);
      // The signature alone is what makes a token a credential; found anywhere, it goes too.
      this.#secret(idToken.split('.')[2]);
      const claims = decodeJwtClaims(idToken) ?? {};
      token = {
        claims: Object.fromEntries(Object.entries(claims).filter(([name]) => KEPT_CLAIMS.has(name))),
        removedClaims: Object.keys(claims).filter((name) => !KEPT_CLAIMS.has(name)),
      };
      body = { ...(body as Record<string, unknown>), idToken: removedText(label) };
      this.#count('token');
    }
    body = this.#fields(body);
    const response = {
      status: r.status,
      headers: this.#headers(r.headers, undefined),
      ...(body !== undefined ? { body } : text !== '' ? { bodyText: text } : {}),
      wireBytes: r.wire.length,
      contentEncoding,
    };
    return { response, token, failure };
  }

  /** What was removed and how, with how many values of each kind this recording lost. */
  removals(): Removal[] {
    const n = (...whats: string[]) => whats.reduce((sum, w) => sum + (this.#counts.get(w) ?? 0), 0);
    return [
      { what: 'API keys', how: `replaced by ${KEY_PSEUDONYM_PREFIX}N (meta.json "keys" says which customer each was configured for), in auth bodies and in any other text`, count: n('API key') },
      { what: 'API secrets (ApiSecret of auth bodies)', how: removedText('API secret'), count: n('API secret') },
      {
        what: 'tokens (idToken of auth answers)',
        how: `${removedText('token N of recorded-key-M')}; the claims a client reads (customer, scopes, iat, exp) are kept in the exchange's "token.claims", the others are named in "token.removedClaims"`,
        count: n('token'),
      },
      { what: 'Authorization headers', how: `Bearer ${removedText('token N of recorded-key-M')}`, count: n('Authorization header') },
      {
        what: 'webhook signature secrets, additionalHeaders values and other secret fields of bodies (signatureSecret, clientSecret, password, accessToken, refreshToken)',
        how: removedText('<what it was>'),
        count: n('webhook signature secret', 'webhook header value', 'client secret', 'password'),
      },
      {
        what: 'X-Service-Signature, Cookie, Set-Cookie, Proxy-Authorization and X-Api-Key headers',
        how: removedText('<what it was>'),
        count: n('x-service-signature header', 'cookie header', 'set-cookie header', 'proxy-authorization header', 'x-api-key header'),
      },
      { what: 'anything shaped like a JWT', how: removedText('a JWT'), count: n('JWT') },
      {
        what: 'every value above and every secret of the configuration (API_SECRET, WEBHOOK_SECRET, WEBHOOK_PREVIOUS_SECRET, WEBHOOK_REQUIRED_HEADERS values, and those of CUSTOMERS_FILE), wherever else they appear',
        how: '[REDACTED], in every form: as is, JSON-escaped, URL-encoded, base64, base64url, hex, and any cut of 12 or more characters of these',
        count: n('secret elsewhere'),
      },
    ];
  }
}
