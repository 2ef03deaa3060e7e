import { readFileSync } from 'node:fs';
// Named imports, not the `z` namespace: the bundled command then leaves out what config does not use.
import { array, object, record, string } from 'zod';
import { HTTP_HEADER_NAME } from './net.ts';
import { readSecretFile } from './secrets.ts';
import { jsonSyntaxProblem, parseJsonText } from './strict-json.ts';
import type { CustomerConfig, Env } from './config-types.ts';
import { fail, instant, secretFrom } from './config-parse.ts';
import { checkWebhookSecret, parseHeaderMap } from './config-webhook.ts';

/** The platform's customer ids are UUIDs (API document, 2.6); anything else is a typo that would file data wrongly. */
const CUSTOMER_ID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

function customerId(variable: string, value: string): string {
  if (!CUSTOMER_ID.test(value)) {
    fail(variable, value, 'not a customer id (the platform\'s customer ids are UUIDs, e.g. 6f1c0d2e-8a4b-4c1d-9e2f-0123456789ab)', 'copy the customer id from the Admin Console (Open as Customer) or from `occupancy-sync check`');
  }
  return value;
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
  const read = parseJsonText(raw);
  if ('syntaxAt' in read) fail('CUSTOMERS_FILE', path, jsonSyntaxProblem(read.syntaxAt), 'fix the JSON syntax there');
  const json = read.value;
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

/** The customers: CUSTOMERS_FILE's entries, or the one of API_KEY, API_SECRET, CUSTOMER_ID and the WEBHOOK_* secrets. */
export function resolveCustomers(env: Env): CustomerConfig[] {
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
    // Each checked under the variable it came from: the file's when it came from a file (secretFrom prefers it).
    const webhookSecrets = ['WEBHOOK_SECRET', 'WEBHOOK_PREVIOUS_SECRET'].flatMap((variable) => {
      const secret = secretFrom(env, variable);
      return secret ? [checkWebhookSecret(env[`${variable}_FILE`]?.trim() ? `${variable}_FILE` : variable, secret)] : [];
    });
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
  return customers;
}
