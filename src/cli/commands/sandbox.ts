import { InvalidArgumentError } from 'commander';
import type { CliContext, CommandModule } from '../context.ts';
import { ConfigError } from '../../errors.ts';
import { systemClock } from '../../clock.ts';
import type { Sandbox } from '../../sandbox/index.ts';
// The variants' names and summaries only: the sandbox itself (graphql and all) loads when the command runs.
import { API_VARIANT_INFO, API_VARIANTS, isApiVariant, type ApiVariant } from '../../sandbox/api-variants.ts';

const DAY = 24 * 60 * 60 * 1000;

function integer(name: string, min: number, max = Number.MAX_SAFE_INTEGER) {
  return (raw: string): number => {
    const value = Number(raw);
    if (!/^-?\d+$/.test(raw.trim()) || !Number.isSafeInteger(value) || value < min || value > max) {
      throw new InvalidArgumentError(`${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(raw)}`);
    }
    return value;
  };
}

interface SandboxCliOptions {
  port: number;
  host: string;
  seed: number;
  expiresIn: number;
  customers: number;
  days: number;
  buildings: number;
  floorSpaces: number;
  insecureWebhookTls?: boolean;
  apiVariant: ApiVariant;
  replay?: string;
}

/** What a user needs to point occupancy-sync (or their own client) at this sandbox. */
export function describeSandbox(sandbox: Sandbox): string {
  const variant = API_VARIANT_INFO[sandbox.apiVariant];
  const lines = [
    `occupancy-sync sandbox listening on ${sandbox.url}`,
    `API variant ${sandbox.apiVariant}: ${variant.query} (schema: ${variant.schemaFile})`,
    '',
    'Customers and demo API keys (local toy data, not real secrets):',
  ];
  for (const c of sandbox.customers) {
    lines.push(`  ${c.name}`, `    CUSTOMER_ID  ${c.id}`);
    lines.push(`    read-only key   (ReadPublicApi)                 ${c.readKey.key}   secret ${c.readKey.secret}`);
    lines.push(`    read-write key  (ReadPublicApi, WritePublicApi) ${c.writeKey.key}  secret ${c.writeKey.secret}`);
  }
  const first = sandbox.customers[0]!;
  lines.push(
    '',
    'Example .env (first customer; the read-write key also allows webhook registration):',
    `API_BASE_URL=${sandbox.url}`,
    `API_KEY=${first.writeKey.key}`,
    `API_SECRET=${first.writeKey.secret}`,
    `CUSTOMER_ID=${first.id}`,
    // Quoted: names have spaces, and the block may be sourced by a shell as well as read as .env.
    `CUSTOMER_NAME=${JSON.stringify(first.name)}`,
    '',
    `Endpoints: POST ${sandbox.url}/api/v1/auth, POST ${sandbox.url}/api/external/query`,
    'Stop with Ctrl-C or SIGTERM.',
    '',
  );
  return lines.join('\n');
}

/** The longest variant's name: the listing in --help is aligned to it. */
const VARIANT_WIDTH = Math.max(...API_VARIANTS.map((v) => v.length));

export const sandboxCommand: CommandModule = (program, ctx) => {
  program
    .command('sandbox')
    .description(
      'Run a local stand-in for the platform API: token auth, the GraphQL endpoint with deterministic synthetic ' +
        'buildings and occupancy data, and signed webhook deliveries as new observations arrive. Prints demo keys.',
    )
    .option('-p, --port <port>', 'TCP port to listen on (0 picks a free one)', integer('--port', 0, 65535), 4000)
    .option('--host <host>', 'interface to bind; keep it on loopback, the keys are public', '127.0.0.1')
    .option('--seed <n>', 'seed of the synthetic data (same seed, same ids and values)', integer('--seed', 0), 1)
    .option('--expires-in <seconds>', 'token lifetime returned as expiresIn', integer('--expires-in', 1), 900)
    .option('--customers <n>', 'number of customers, each with a read-only and a read-write key', integer('--customers', 1, 1000), 2)
    .option('--days <d>', 'days of history before now', integer('--days', 0, 3650), 7)
    .option('--buildings <n>', 'buildings per customer', integer('--buildings', 0, 10000), 3)
    .option('--floor-spaces <n>', 'floor spaces per building', integer('--floor-spaces', 0, 10000), 4)
    .option('--insecure-webhook-tls', 'accept self-signed certificates of https webhook receivers')
    .option(
      '--api-variant <name>',
      `the shape of the API over the same data: ${API_VARIANTS.join(', ')} (below); v1 is the API occupancy-sync assumes, the others are shaped otherwise, to adapt to with a definitions file (docs/api-assumptions.md)`,
      (value: string) => {
        if (!isApiVariant(value)) throw new InvalidArgumentError(`use one of ${API_VARIANTS.join(', ')}`);
        return value;
      },
      'v1',
    )
    // --replay (issue 26, the record helper's): a recording's answers instead of synthetic data; record.ts serves it.
    .option('--replay <dir>', 'answer from a recording made by `occupancy-sync record` instead (only --port and --host apply); prints how to run the recorded command against it')
    .addHelpText(
      'after',
      `
Observations arrive every 5 minutes per floor space and become visible up to 5 minutes late. Webhooks registered
through the API get one Occupancy delivery per new tick (signed when a signatureSecret is set).

API variants (--api-variant): the same sensors, ids and webhook delivery body; auth, gzip and buildings(nameLike) as
documented in all; the occupancy query and the webhook mutations differ; presence and change hold what such sensors
report, no headcount and only the status changes (schemas and details: docs/sandbox.md):
${API_VARIANTS.map((v) => `  ${v.padEnd(VARIANT_WIDTH)} ${API_VARIANT_INFO[v].query}\n  ${' '.repeat(VARIANT_WIDTH)} ${API_VARIANT_INFO[v].summary}`).join('\n')}

Examples:
  $ occupancy-sync sandbox --port 4000
  $ occupancy-sync sandbox --port 4000 --seed 42 --customers 3 --days 30
  $ occupancy-sync sandbox --port 0 --expires-in 60      # short-lived tokens, to watch re-authentication
  $ occupancy-sync sandbox --api-variant v2              # an API shaped otherwise, to practise adapting to it
  $ occupancy-sync sandbox --api-variant token           # AppSync-like: items + nextToken, inclusive epoch-second end
  $ occupancy-sync sandbox --replay ./recording          # answers as the platform did in a recorded run`,
    )
    .action((opts: SandboxCliOptions) => runSandbox(opts, ctx));
};

/** Serves a recording, or the synthetic platform until the process is told to stop. */
async function runSandbox(opts: SandboxCliOptions, ctx: CliContext): Promise<void> {
  if (opts.replay !== undefined) {
    const { replaySandbox } = await import('./record.ts');
    await replaySandbox(ctx, { dir: opts.replay, host: opts.host, port: opts.port });
    return;
  }
  const { startSandbox } = await import('../../sandbox/index.ts');
  const now = systemClock.now();
  let sandbox: Sandbox;
  try {
    sandbox = await startSandbox({
      host: opts.host,
      port: opts.port,
      seed: opts.seed,
      expiresIn: opts.expiresIn,
      customers: opts.customers,
      buildingsPerCustomer: opts.buildings,
      floorSpacesPerBuilding: opts.floorSpaces,
      dataStart: Math.floor((now - opts.days * DAY) / 300_000) * 300_000,
      webhooks: { autoDeliver: true, rejectUnauthorized: !opts.insecureWebhookTls },
      apiVariant: opts.apiVariant,
      logger: ctx.logger(),
    });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL') {
      throw new ConfigError(`sandbox: cannot listen on ${opts.host}:${opts.port} (${code}); pick another with --port or --host`, { cause: error });
    }
    throw error;
  }
  ctx.stdout.write(describeSandbox(sandbox));
  if (!ctx.signal.aborted) {
    await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
  }
  await sandbox.close();
  ctx.stdout.write('sandbox stopped\n');
}
