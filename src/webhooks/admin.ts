import { randomBytes } from 'node:crypto';
import { closeSync, constants, fchmodSync, openSync, writeSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { WEBHOOK_SECRET_MAX, WEBHOOK_SECRET_MIN } from '../config.ts';
import { HTTP_HEADER_NAME, isLoopback } from '../net.ts';
import { readSecretFile as readSecret } from '../secrets.ts';
import { UsageError } from '../errors.ts';
import { loadDocument, type ApiClient, type LoadedDocument } from '../api/index.ts';
import { readResult, WEBHOOK_OPERATIONS, type WebhookOperation, type WebhookOperationSpecs } from '../webhook-operations.ts';

/**
 * Webhook management through the GraphQL API, plus the local checks that run before any call: a bad URL, secret or
 * header fails here with the flag, the value and the fix, instead of as a platform error after a round trip.
 */

export interface WebhookHeader {
  key: string;
  value: string;
}

export interface WebhookView {
  id: string;
  url: string;
  eventTypes: string[];
  additionalHeaders: WebhookHeader[];
  /** Whether deliveries are signed; the secret itself is write-only. */
  signed: boolean;
  compress: boolean;
}

export interface RegisterWebhookInput {
  url: string;
  eventTypes: string[];
  additionalHeaders?: WebhookHeader[];
  signatureSecret?: string;
  compress?: boolean;
}

export interface UpdateWebhookInput {
  url?: string;
  additionalHeaders?: WebhookHeader[];
  signatureSecret?: string;
  clearSignatureSecret?: boolean;
  compress?: boolean;
}

/**
 * Generated secrets are 48 random bytes as 96 hex characters: 384 bits, inside the platform's 64-256 character
 * range, and free of characters that need quoting in shells, .env files or systemd credentials.
 */
export const GENERATED_SECRET_BYTES = 48;

export function generateSecret(): string {
  return randomBytes(GENERATED_SECRET_BYTES).toString('hex');
}

/** Headers the platform sets itself; a custom header with one of these names would clash with them. */
const RESERVED_HEADERS = new Set([
  'content-type',
  'content-length',
  'content-encoding',
  'transfer-encoding',
  'host',
  'connection',
  'x-service-signature',
]);

/** Parses one `--header KEY:VALUE` flag. */
export function parseHeaderFlag(raw: string, flag = '--header'): WebhookHeader {
  const colon = raw.indexOf(':');
  const example = `${flag} X-Webhook-Token:some-long-random-value`;
  if (colon <= 0) {
    throw new UsageError(`${flag} ${JSON.stringify(raw)}: expected KEY:VALUE. Fix: e.g. ${example}`);
  }
  const key = raw.slice(0, colon).trim();
  const value = raw.slice(colon + 1).trim();
  if (!HTTP_HEADER_NAME.test(key)) {
    throw new UsageError(
      `${flag} ${JSON.stringify(raw)}: ${JSON.stringify(key)} is not a valid header name. Fix: use letters, digits and - only, e.g. ${example}`,
    );
  }
  if (RESERVED_HEADERS.has(key.toLowerCase())) {
    throw new UsageError(`${flag} ${JSON.stringify(raw)}: ${key} is set by the platform itself. Fix: choose another name, e.g. ${example}`);
  }
  if (value === '') throw new UsageError(`${flag} ${JSON.stringify(raw)}: the value is empty. Fix: e.g. ${example}`);
  if (/[\r\n\0]/.test(value)) throw new UsageError(`${flag} ${JSON.stringify(key + ':...')}: the value contains CR, LF or NUL. Fix: use a single-line value`);
  return { key, value };
}

/** Parses every `--header` flag; a header name given twice is refused (the receiver expects exactly one value). */
export function parseHeaderFlags(raws: readonly string[], flag = '--header'): WebhookHeader[] {
  const headers = raws.map((raw) => parseHeaderFlag(raw, flag));
  const seen = new Set<string>();
  for (const h of headers) {
    if (seen.has(h.key.toLowerCase())) throw new UsageError(`${flag} ${h.key} is given twice. Fix: give each header once`);
    seen.add(h.key.toLowerCase());
  }
  return headers;
}

/** The platform only delivers over HTTPS; plain http is allowed for loopback hosts, which only the sandbox reaches. */
export function validateWebhookUrl(raw: string, flag = '--url'): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`${flag} ${JSON.stringify(raw)}: not an absolute URL. Fix: use e.g. https://hooks.example.com/webhook`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url.hostname))) {
    throw new UsageError(
      `${flag} ${JSON.stringify(raw)}: the platform delivers over HTTPS only (http is accepted for loopback addresses, for the sandbox). Fix: use an https:// URL, e.g. https://hooks.example.com/webhook`,
    );
  }
  if (url.username || url.password) {
    throw new UsageError(`${flag}: the URL must not carry credentials. Fix: remove user:password@ and use --header for a shared value`);
  }
  return raw;
}

export function validateSecret(secret: string, source: string): string {
  if (secret.length < WEBHOOK_SECRET_MIN || secret.length > WEBHOOK_SECRET_MAX) {
    throw new UsageError(
      `${source}: a signature secret has ${WEBHOOK_SECRET_MIN} to ${WEBHOOK_SECRET_MAX} characters, this one has ${secret.length}. Fix: use --generate-secret, or e.g. openssl rand -hex 48`,
    );
  }
  return secret;
}

/** Reads a signature secret from a file (src/secrets.ts readSecretFile) and checks its length. */
export function readSecretFile(path: string, flag = '--signature-secret-file'): string {
  const where = `${flag} ${JSON.stringify(path)}`;
  const text = readSecret(path, (problem, fix, cause) => {
    throw new UsageError(`${where}: ${problem}. Fix: ${fix}`, { cause });
  });
  return validateSecret(text, where);
}

/**
 * Writes a secret to a new file created with mode 0600 (never briefly readable by others). An existing file is
 * refused unless `force`, so a rotation cannot overwrite the secret still in use by accident.
 */
export function writeSecretFile(path: string, secret: string, options: { force?: boolean; flag?: string } = {}): void {
  const flag = options.flag ?? '--secret-out';
  const flags = constants.O_WRONLY | constants.O_CREAT | (options.force ? constants.O_TRUNC : constants.O_EXCL);
  let fd: number;
  try {
    fd = openSync(path, flags, 0o600);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    const fix = code === 'EEXIST' ? 'choose a new file, or add --force to overwrite it' : 'check the directory exists and is writable';
    throw new UsageError(`${flag} ${JSON.stringify(path)}: cannot create the file (${code}). Fix: ${fix}`, { cause: error });
  }
  try {
    // With --force the file may have existed with a looser mode; the umask may also have narrowed it. Pin 0600.
    fchmodSync(fd, 0o600);
    writeSync(fd, `${secret}\n`);
  } finally {
    closeSync(fd);
  }
}

const documentPath = (name: string) => fileURLToPath(new URL(`./graphql/${name}.graphql`, import.meta.url));
const builtin = new Map<WebhookOperation, LoadedDocument>();

/**
 * How each operation is run: the built-in document answering under the operation's own name, or what a user's
 * definitions file says (docs/api-assumptions.md): another document, where the webhook is in its answer, where
 * refusals are listed, or that the platform has no such operation. Documents are read on first use.
 */
export type { WebhookOperationSpecs };

interface Operation {
  document: LoadedDocument;
  result: string;
  errors?: string;
}

function operationOf(name: WebhookOperation, specs: WebhookOperationSpecs, definitions: string | undefined): Operation {
  const spec = specs[name];
  if (spec && 'absent' in spec) {
    throw new UsageError(
      `the platform has no ${name} operation (declared absent in ${definitions ?? 'the definitions file'}). Fix: ` +
        (name === 'sendTestEvent' ? 'trigger a real event on the platform to test the receiver' : `add the platform's ${name} document to the definitions file`),
    );
  }
  if (spec) return { document: loadDocument(spec.document), result: spec.result, ...(spec.errors && { errors: spec.errors }) };
  let document = builtin.get(name);
  if (!document) builtin.set(name, (document = loadDocument(documentPath(name))));
  return { document, result: name };
}

/** The built-in documents of the four operations (src/webhooks/graphql/), by operation. */
export function webhookDocuments(): Record<WebhookOperation, LoadedDocument> {
  return Object.fromEntries(WEBHOOK_OPERATIONS.map((name) => [name, operationOf(name, {}, undefined).document])) as Record<WebhookOperation, LoadedDocument>;
}

/** The variables the document declares, from everything occupancy-sync can send for the operation. */
function variablesFor(document: LoadedDocument, offered: Record<string, unknown>): Record<string, unknown> {
  const operation = document.document.definitions.find((d) => d.kind === 'OperationDefinition');
  const declared = new Set(operation?.kind === 'OperationDefinition' ? (operation.variableDefinitions ?? []).map((v) => v.variable.name.value) : []);
  return Object.fromEntries(Object.entries(offered).filter(([name, value]) => declared.has(name) && value !== undefined));
}

export interface WebhookAdmin {
  register(input: RegisterWebhookInput): Promise<WebhookView>;
  update(id: string, input: UpdateWebhookInput): Promise<WebhookView>;
  list(): Promise<WebhookView[]>;
  sendTest(id: string, type?: string): Promise<boolean>;
}

/**
 * Webhook management for the customer of `client`'s API key. Inputs are validated locally before the call.
 * Mutations are never repeated after an ambiguous failure (the client's policy), so a register cannot create two.
 */
export function createWebhookAdmin(
  client: ApiClient,
  options: { signal?: AbortSignal; operations?: WebhookOperationSpecs; definitionsFile?: string } = {},
): WebhookAdmin {
  const specs = options.operations ?? {};
  const signal = options.signal;
  const run = async (name: WebhookOperation, offered: Record<string, unknown>): Promise<unknown> => {
    const op = operationOf(name, specs, options.definitionsFile);
    const data = await client.request<unknown>(op.document, variablesFor(op.document, offered), { signal });
    if (op.errors) {
      const refusals = readResult(data, op.errors);
      if (Array.isArray(refusals) && refusals.length > 0) {
        const text = refusals.map((e) => {
          const r = e as { message?: unknown; field?: unknown };
          return `${Array.isArray(r.field) ? `${r.field.join('.')}: ` : ''}${typeof r.message === 'string' ? r.message : JSON.stringify(e)}`;
        });
        throw new UsageError(`the platform refused ${name}: ${text.join('; ')}. Fix: correct the value it names`);
      }
    }
    const result = readResult(data, op.result);
    if (result === undefined || result === null) {
      throw new UsageError(`the answer to ${name} has nothing at ${op.result}. Fix: check \`result:\` for ${name} in the definitions file (the path from data to the webhook)`);
    }
    return result;
  };
  return {
    async register(input) {
      validateWebhookUrl(input.url);
      if (input.signatureSecret !== undefined) validateSecret(input.signatureSecret, 'signatureSecret');
      if (input.eventTypes.length === 0) throw new UsageError('--events: no event type given. Fix: e.g. --events Occupancy');
      return (await run('registerWebhook', { input, ...input })) as WebhookView;
    },
    async update(id, input) {
      if (input.url !== undefined) validateWebhookUrl(input.url);
      if (input.signatureSecret !== undefined) validateSecret(input.signatureSecret, 'signatureSecret');
      if (input.signatureSecret !== undefined && input.clearSignatureSecret) {
        throw new UsageError('a new signature secret and clearing the secret exclude each other. Fix: give one of them');
      }
      return (await run('updateWebhook', { id, webhookId: id, input, ...input })) as WebhookView;
    },
    async list() {
      const hooks = await run('webhooks', {});
      if (!Array.isArray(hooks)) throw new UsageError('the answer to webhooks is not a list. Fix: check `result:` for webhooks in the definitions file');
      return hooks as WebhookView[];
    },
    async sendTest(id, type = 'Occupancy') {
      return (await run('sendTestEvent', { webhookId: id, id, type })) === true;
    },
  };
}

/**
 * An event type asked of the platform (`webhook register --events`, `webhook test --type`) is one whose deliveries a
 * stream of the definitions in force stores (`stored`: the types their `deliveries:` declare): a webhook of another
 * type would deliver what the receiver cannot keep, and a misspelt one (the platform's names are case-sensitive)
 * what it never sends.
 */
export function checkEventType(flag: string, type: string, stored: readonly string[]): void {
  if (stored.includes(type)) return;
  const near = stored.find((t) => t.toLowerCase() === type.toLowerCase());
  const fix = near !== undefined ? `write ${near}` : stored.length > 0 ? `use ${stored.join(', ')}` : 'declare deliveries: in a stream of the definitions file first (docs/webhooks.md)';
  throw new UsageError(`${flag} ${JSON.stringify(type)}: no stream of the definitions in force stores deliveries of that event type. Fix: ${fix} (a definitions file's \`deliveries: { type: ... }\` adds one)`);
}

/** The flags of `webhook register` (src/cli/commands/webhook.ts). */
export interface RegisterFlags {
  url: string;
  header: string[];
  signatureSecretFile?: string;
  generateSecret?: boolean;
  secretOut?: string;
  compress?: boolean;
  events: string;
}

/**
 * `webhook register`'s flags checked before any request, as the input to register; the secret of a file is in it,
 * a generated one is added by whoever applies it (it is printed or written only once the registration went through).
 */
export function registerInput(flags: RegisterFlags, stored: readonly string[]): RegisterWebhookInput {
  const url = validateWebhookUrl(flags.url);
  const additionalHeaders = parseHeaderFlags(flags.header);
  const eventTypes = flags.events.split(',').map((t) => t.trim()).filter(Boolean);
  if (eventTypes.length === 0) throw new UsageError(`--events ${JSON.stringify(flags.events)}: no event type. Fix: e.g. --events Occupancy`);
  const twice = eventTypes.find((t, i) => eventTypes.indexOf(t) !== i);
  if (twice !== undefined) throw new UsageError(`--events ${JSON.stringify(flags.events)}: ${twice} is named twice. Fix: name each event type once`);
  for (const type of eventTypes) checkEventType('--events', type, stored);
  if (flags.secretOut && !flags.generateSecret) throw new UsageError('--secret-out: only used with --generate-secret. Fix: add --generate-secret');
  const fileSecret = flags.signatureSecretFile ? readSecretFile(flags.signatureSecretFile) : undefined;
  return { url, eventTypes, additionalHeaders, compress: flags.compress ?? false, ...(fileSecret && { signatureSecret: fileSecret }) };
}

/** The flags of `webhook update` (src/cli/commands/webhook.ts). */
export interface UpdateFlags {
  url?: string;
  header: string[];
  clearHeaders?: boolean;
  rotateSecret?: boolean;
  signatureSecretFile?: string;
  secretOut?: string;
  clearSignatureSecret?: boolean;
  compress?: boolean;
}

/** `webhook update`'s flags checked before any request, as the changes to make (a rotated secret is added later). */
export function updateInput(flags: UpdateFlags): UpdateWebhookInput {
  if (flags.header.length > 0 && flags.clearHeaders) throw new UsageError('--header and --clear-headers exclude each other. Fix: give one of them');
  if (flags.secretOut && !flags.rotateSecret) throw new UsageError('--secret-out: only used with --rotate-secret. Fix: add --rotate-secret');
  const input: UpdateWebhookInput = {
    ...(flags.url !== undefined && { url: validateWebhookUrl(flags.url) }),
    ...(flags.header.length > 0 && { additionalHeaders: parseHeaderFlags(flags.header) }),
    ...(flags.clearHeaders && { additionalHeaders: [] }),
    ...(flags.signatureSecretFile && { signatureSecret: readSecretFile(flags.signatureSecretFile) }),
    ...(flags.clearSignatureSecret && { clearSignatureSecret: true }),
    ...(flags.compress !== undefined && { compress: flags.compress }),
  };
  if (Object.keys(input).length === 0 && !flags.rotateSecret) {
    throw new UsageError('webhook update: nothing to change. Fix: give --rotate-secret, --clear-signature-secret, --header, --clear-headers, --url or --[no-]compress');
  }
  return input;
}
