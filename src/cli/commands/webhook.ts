import { Option, type Command } from 'commander';
import type { CliContext, CommandModule } from '../context.ts';
import { requireApi, selectCustomers, type CustomerConfig } from '../../config.ts';
import { AuthError, ConfigError, ExitCode, GraphQLResponseError, UsageError } from '../../errors.ts';
import { globalSecrets, maskSecret } from '../../logger.ts';
import type { ApiClient } from '../../api/index.ts';
import type { WebhookAdmin, WebhookView } from '../../webhooks/admin.ts';

const collect = (value: string, previous: string[]) => [...previous, value];

function intOption(flag: string, min: number, max: number) {
  return (raw: string) => {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) throw new UsageError(`${flag} ${JSON.stringify(raw)}: must be an integer from ${min} to ${max}`);
    return n;
  };
}

/** One customer's client and admin; the caller closes the client. */
async function adminFor(ctx: CliContext, customer: CustomerConfig): Promise<{ client: ApiClient; admin: WebhookAdmin }> {
  const [{ createClient }, { createWebhookAdmin }, { loadStreams }, { parseDocumentSource }] = await Promise.all([
    import('../../app/clients.ts'),
    import('../../webhooks/admin.ts'),
    import('../../app/streams.ts'),
    import('../../api/documents.ts'),
  ]);
  // The user's definitions file may replace webhook documents (docs/api-assumptions.md); read before any request.
  const { webhooks, file } = loadStreams(ctx.config(), { parseDocument: parseDocumentSource });
  const client = createClient(ctx.config(), customer, 'admin', { logger: ctx.logger() });
  return { client, admin: createWebhookAdmin(client, { signal: ctx.signal, operations: webhooks, ...(file && { definitionsFile: file }) }) };
}

/** Mutations concern one customer: with several configured, --customer must say which. */
function oneCustomer(ctx: CliContext, customerId: string | undefined): CustomerConfig {
  const config = ctx.config();
  requireApi(config);
  const customers = selectCustomers(config, customerId);
  if (customers.length > 1) {
    throw new UsageError(`--customer: ${customers.length} customers are configured (${customers.map((c) => c.id).join(', ')}). Fix: name one with --customer ID`);
  }
  return customers[0]!;
}

async function withAdmin<T>(ctx: CliContext, customer: CustomerConfig, run: (admin: WebhookAdmin) => Promise<T>): Promise<T> {
  const { client, admin } = await adminFor(ctx, customer);
  try {
    return await run(admin);
  } finally {
    await client.close();
  }
}

function describeWebhook(hook: WebhookView): string {
  const headers = hook.additionalHeaders.map((h) => `${h.key} (${maskSecret(h.value)})`).join(', ') || 'none';
  return [
    `  id:       ${hook.id}`,
    `  url:      ${hook.url}`,
    `  events:   ${hook.eventTypes.join(', ')}`,
    `  signed:   ${hook.signed ? 'yes' : 'no'}`,
    `  compress: ${hook.compress ? 'yes' : 'no'}`,
    `  headers:  ${headers}`,
  ].join('\n');
}

/** Values of custom headers are shared secrets: listings show their length only. */
const masked = (hook: WebhookView) => ({ ...hook, additionalHeaders: hook.additionalHeaders.map((h) => ({ key: h.key, value: maskSecret(h.value) })) });

interface SecretFlags {
  secretOut?: string;
  force?: boolean;
}

/**
 * A new secret is written to --secret-out before the mutation (so a write failure changes nothing on the platform)
 * or printed once after it succeeded. When the mutation fails in a way that may still have applied it (a timeout or
 * a dropped connection), the secret is printed anyway: it may be the one the platform now signs with.
 */
async function applyNewSecret<T>(ctx: CliContext, flags: SecretFlags, mutate: (secret: string) => Promise<T>): Promise<T> {
  const { generateSecret, writeSecretFile } = await import('../../webhooks/admin.ts');
  const secret = generateSecret();
  globalSecrets.add(secret);
  if (flags.secretOut) writeSecretFile(flags.secretOut, secret, { force: flags.force });
  try {
    const result = await mutate(secret);
    if (flags.secretOut) {
      ctx.stdout.write(`Signature secret written to ${flags.secretOut} (mode 0600). The platform never shows it again.\n`);
    } else {
      ctx.stdout.write(`Signature secret (shown once; the platform never shows it again):\n${secret}\n`);
    }
    return result;
  } catch (error) {
    const definite = error instanceof AuthError || error instanceof GraphQLResponseError || error instanceof ConfigError;
    if (!definite && !flags.secretOut) {
      ctx.stdout.write(`The request failed, but the platform may have applied the new secret anyway. Keep it until a retry succeeds:\n${secret}\n`);
    }
    throw error;
  }
}

const RECEIVER_HINT =
  'Give the receiver the secret: WEBHOOK_SECRET (or WEBHOOK_SECRET_FILE). To rotate it later without losing a delivery, follow docs/webhooks.md ("Rotating the signature secret").\n';

/** The rotation, step by step: the same four steps as README.md and docs/webhooks.md (a test holds them to it). */
export const ROTATION_STEPS = `
Rotating the signature secret without losing a delivery (receivers learn the new secret before the platform signs
with it; the previous one stays accepted for 24 hours):
  1. occupancy-sync webhook new-secret --out /etc/occupancy-sync/webhook-secret.new
  2. On every receiver set WEBHOOK_SECRET_FILE=/etc/occupancy-sync/webhook-secret.new,
     WEBHOOK_PREVIOUS_SECRET_FILE=/etc/occupancy-sync/webhook-secret and
     WEBHOOK_PREVIOUS_SECRET_UNTIL=<now + 24 h, e.g. 2026-03-02T12:00:00Z>, and restart it
  3. occupancy-sync webhook update --id <id> --signature-secret-file /etc/occupancy-sync/webhook-secret.new
  4. After WEBHOOK_PREVIOUS_SECRET_UNTIL: move webhook-secret.new over webhook-secret, point WEBHOOK_SECRET_FILE
     at it, remove the two WEBHOOK_PREVIOUS_SECRET_* variables, and restart the receivers
`;

export const webhookCommand: CommandModule = (program, ctx) => {
  const webhook = program
    .command('webhook')
    .description('Manage the platform webhooks of a customer, and receive their signed deliveries')
    .addHelpText('after', '\nSee docs/webhooks.md for the receiver setup, status codes and the secret rotation procedure.');
  for (const sub of [registerCommand, updateCommand, newSecretCommand, listCommand, testCommand, serveCommand]) sub(webhook, ctx);
};

function registerCommand(webhook: Command, ctx: CliContext): void {
  webhook
    .command('register')
    .description('Register a webhook that pushes events to --url (needs scope WritePublicApi on the key and a user with write permission)')
    .requiredOption('--url <url>', 'delivery endpoint: https:// (http:// only for loopback, i.e. the sandbox)')
    .option('--header <KEY:VALUE>', 'custom header sent verbatim with every delivery (repeatable)', collect, [])
    .addOption(new Option('--signature-secret-file <file>', 'sign deliveries with the secret in this file (64-256 characters)').conflicts('generateSecret'))
    .option('--generate-secret', 'generate a random secret (96 hex characters), print it once or write it to --secret-out')
    .option('--secret-out <file>', 'with --generate-secret: write the secret to this new file (mode 0600) instead of printing it')
    .option('--force', 'let --secret-out overwrite an existing file')
    .option('--compress', 'the platform gzips deliveries (the signature still covers the decompressed body)')
    .option('--events <types>', 'comma-separated event types, each one the definitions store deliveries of', 'Occupancy')
    .option('--customer <id>', 'the customer (required when several are configured)')
    .addHelpText('after', `
Examples:
  occupancy-sync webhook register --url https://hooks.example.com/webhook --generate-secret --secret-out /etc/occupancy-sync/webhook-secret
  occupancy-sync webhook register --url https://hooks.example.com/webhook --header X-Webhook-Token:$(openssl rand -hex 24) --compress
`)
    .action(async (opts: { url: string; header: string[]; signatureSecretFile?: string; generateSecret?: boolean; secretOut?: string; force?: boolean; compress?: boolean; events: string; customer?: string }) => {
      const { registerInput } = await import('../../webhooks/admin.ts');
      const input = registerInput(opts, await storedEventTypes(ctx));
      const customer = oneCustomer(ctx, opts.customer);
      const hook = await withAdmin(ctx, customer, (admin) =>
        opts.generateSecret ? applyNewSecret(ctx, opts, (signatureSecret) => admin.register({ ...input, signatureSecret })) : admin.register(input),
      );
      ctx.stdout.write(`Registered webhook for customer ${customer.id}:\n${describeWebhook(hook)}\n`);
      if (hook.signed) ctx.stdout.write(RECEIVER_HINT);
      else ctx.stderr.write('Warning: deliveries are not signed; the receiver can only check custom headers. Prefer --generate-secret.\n');
      if ((input.additionalHeaders ?? []).length > 0) ctx.stdout.write('Give the receiver the same headers: WEBHOOK_REQUIRED_HEADERS=\'{"Name":"value"}\'.\n');
    });
}

function updateCommand(webhook: Command, ctx: CliContext): void {
  webhook
    .command('update')
    .description('Change a webhook: rotate or clear its signature secret, replace its headers, switch compression')
    .requiredOption('--id <id>', 'the webhook id (see `webhook list`)')
    .option('--url <url>', 'a new delivery endpoint')
    .option('--header <KEY:VALUE>', 'replace the custom headers with these (repeatable)', collect, [])
    .option('--clear-headers', 'remove every custom header')
    .addOption(
      new Option('--rotate-secret', 'generate a new random secret and set it at once (receivers refuse deliveries until they know it: see the rotation below)').conflicts([
        'clearSignatureSecret',
        'signatureSecretFile',
      ]),
    )
    .addOption(new Option('--signature-secret-file <file>', 'set the secret held in this file').conflicts('clearSignatureSecret'))
    .option('--secret-out <file>', 'with --rotate-secret: write the new secret to this new file (mode 0600) instead of printing it')
    .option('--force', 'let --secret-out overwrite an existing file')
    .option('--clear-signature-secret', 'stop signing deliveries')
    .option('--compress', 'gzip deliveries')
    .option('--no-compress', 'send deliveries uncompressed')
    .option('--customer <id>', 'the customer (required when several are configured)')
    .addHelpText('after', `${ROTATION_STEPS}
Examples:
  occupancy-sync webhook update --id 3f6c... --rotate-secret
  occupancy-sync webhook update --id 3f6c... --clear-signature-secret --header X-Webhook-Token:new-value
`)
    .action(async (opts: { id: string; url?: string; header: string[]; clearHeaders?: boolean; rotateSecret?: boolean; signatureSecretFile?: string; secretOut?: string; force?: boolean; clearSignatureSecret?: boolean; compress?: boolean; customer?: string }) => {
      const { updateInput } = await import('../../webhooks/admin.ts');
      const input = updateInput(opts);
      const customer = oneCustomer(ctx, opts.customer);
      const hook = await withAdmin(ctx, customer, (admin) =>
        opts.rotateSecret
          ? applyNewSecret(ctx, opts, (signatureSecret) => admin.update(opts.id, { ...input, signatureSecret }))
          : admin.update(opts.id, input),
      );
      ctx.stdout.write(`Updated webhook for customer ${customer.id}:\n${describeWebhook(hook)}\n`);
      if (opts.rotateSecret || opts.signatureSecretFile) ctx.stdout.write(RECEIVER_HINT);
      if (opts.clearSignatureSecret) ctx.stdout.write('Deliveries are no longer signed. Remove WEBHOOK_SECRET and WEBHOOK_PREVIOUS_SECRET from the receiver, or it refuses them.\n');
    });
}

function newSecretCommand(webhook: Command, ctx: CliContext): void {
  webhook
    .command('new-secret')
    .description('Generate a signature secret (96 hex characters) into a new file, mode 0600, without applying it: step 1 of a rotation')
    .requiredOption('--out <file>', 'the file to create (refused if it exists, unless --force)')
    .option('--force', 'overwrite an existing file')
    .addHelpText('after', `${ROTATION_STEPS}
Examples:
  occupancy-sync webhook new-secret --out /etc/occupancy-sync/webhook-secret.new
`)
    .action(async (opts: { out: string; force?: boolean }) => {
      const { generateSecret, writeSecretFile } = await import('../../webhooks/admin.ts');
      const secret = generateSecret();
      globalSecrets.add(secret);
      writeSecretFile(opts.out, secret, { force: opts.force, flag: '--out' });
      ctx.stdout.write(`New signature secret written to ${opts.out} (mode 0600). Give it to every receiver before the platform signs with it (step 2).\n`);
    });
}

function listCommand(webhook: Command, ctx: CliContext): void {
  webhook
    .command('list')
    .description('List the webhooks of the configured customers (header values are masked; secrets are never readable)')
    .option('--json', 'print JSON')
    .option('--customer <id>', 'only this customer')
    .addHelpText('after', '\nExamples:\n  occupancy-sync webhook list\n  occupancy-sync webhook list --json --customer 0a1b...\n')
    .action(async (opts: { json?: boolean; customer?: string }) => {
      const config = ctx.config();
      requireApi(config);
      const result: Array<{ customerId: string; webhooks: WebhookView[] }> = [];
      for (const customer of selectCustomers(config, opts.customer)) {
        const hooks = await withAdmin(ctx, customer, (admin) => admin.list());
        result.push({ customerId: customer.id, webhooks: hooks.map(masked) });
      }
      if (opts.json) {
        ctx.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
        return;
      }
      for (const { customerId, webhooks } of result) {
        ctx.stdout.write(`Customer ${customerId}: ${webhooks.length} webhook(s)\n`);
        for (const hook of webhooks) ctx.stdout.write(`${describeWebhook(hook)}\n\n`);
      }
    });
}

/** The event types whose deliveries the definitions in force store (their `deliveries:`). */
async function storedEventTypes(ctx: CliContext): Promise<string[]> {
  const { deliveryRulesFor, loadStreams } = await import('../../app/streams.ts');
  return [...deliveryRulesFor(loadStreams(ctx.config()).streams).keys()];
}

function testCommand(webhook: Command, ctx: CliContext): void {
  webhook
    .command('test')
    .description('Ask the platform to send a test delivery now (dev-mode test mutation); exits 1 when the receiver did not accept it')
    .requiredOption('--id <id>', 'the webhook id (see `webhook list`)')
    .option('--type <type>', 'event type of the test delivery (one the definitions store deliveries of)', 'Occupancy')
    .option('--customer <id>', 'the customer (required when several are configured)')
    .addHelpText('after', '\nExample:\n  occupancy-sync webhook test --id 3f6c...\n')
    .action(async (opts: { id: string; type: string; customer?: string }) => {
      (await import('../../webhooks/admin.ts')).checkEventType('--type', opts.type, await storedEventTypes(ctx));
      const customer = oneCustomer(ctx, opts.customer);
      const accepted = await withAdmin(ctx, customer, (admin) => admin.sendTest(opts.id, opts.type));
      if (accepted) {
        ctx.stdout.write(`Test delivery (${opts.type}) sent to webhook ${opts.id}: the receiver accepted it.\n`);
      } else {
        ctx.stdout.write(`Test delivery (${opts.type}) sent to webhook ${opts.id}: the receiver did NOT accept it; the platform will retry. Check the receiver's log for the refusal reason.\n`);
        ctx.exitCode = ExitCode.FAILURE;
      }
    });
}

function serveCommand(webhook: Command, ctx: CliContext): void {
  webhook
    .command('serve')
    .description('Receive webhook deliveries and store them (HTTPS itself with WEBHOOK_TLS_CERT/KEY, else HTTP behind a TLS proxy)')
    .option('--port <n>', 'listen port (default WEBHOOK_PORT or 8080)', intOption('--port', 0, 65535))
    .option('--host <host>', 'listen address (default WEBHOOK_HOST or 0.0.0.0)')
    .option('--path <path>', 'delivery path (default WEBHOOK_PATH or /webhook)')
    .addHelpText('after', `
Runs until SIGTERM or SIGINT, then stops accepting, finishes deliveries in flight and exits 0.
Secrets come from WEBHOOK_SECRET and WEBHOOK_PREVIOUS_SECRET (or the customers file); custom headers from
WEBHOOK_REQUIRED_HEADERS. Answers 200 once stored, 401/400/404/405/413/415 for refusals, 503 when storage failed.
Examples:
  WEBHOOK_SECRET_FILE=/etc/occupancy-sync/webhook-secret occupancy-sync webhook serve --port 8080
  occupancy-sync webhook serve --host 127.0.0.1 --path /hooks/occupancy
`)
    .action(async (opts: { port?: number; host?: string; path?: string }) => {
      if (opts.path !== undefined && !opts.path.startsWith('/')) throw new UsageError(`--path ${JSON.stringify(opts.path)}: must start with /. Fix: e.g. --path /webhook`);
      const { serveWebhooks } = await import('../../app/webhook-serve.ts');
      await serveWebhooks({
        config: ctx.config(),
        logger: ctx.logger(),
        signal: ctx.signal,
        ...(opts.port !== undefined && { port: opts.port }),
        ...(opts.host !== undefined && { host: opts.host }),
        ...(opts.path !== undefined && { path: opts.path }),
        onListening: (receiver) => void ctx.stderr.write(`Receiving webhook deliveries at ${receiver.url}\n`),
      });
      ctx.exitCode = ExitCode.OK;
    });
}
