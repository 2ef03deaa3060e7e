import type { CliContext, CommandModule } from '../context.ts';
import { requireApi, selectCustomers, type Config, type CustomerConfig } from '../../config.ts';
import { ConfigError, ExitCode, exitCodeFor, UsageError } from '../../errors.ts';
import { systemClock } from '../../clock.ts';
import type { Finding } from '../../api/diagnose.ts';
import type { CheckPlan, CustomerCheck } from '../../app/check.ts';
import type { TablesCheck } from '../../app/check-tables.ts';
import { engineSettings } from '../../app/engine-settings.ts';

interface CheckOptions {
  customer?: string;
  json?: boolean;
}

const OK = '  ok    ';
const FAIL = '  FAIL  ';
const WARN = '  warn  ';
const SKIP = '  skip  ';

/** The declared tables' lines: as declared, what the next sync changes, what it would refuse (docs/tables.md). */
export function formatTables(tables: TablesCheck): string {
  const lines = ['declared tables'];
  if (tables.skipped) lines.push(`${WARN}${tables.skipped}`);
  else if (tables.tables.length === 0) lines.push(`${OK}no occupancy-sync tables in the database yet: occupancy-sync migrate (or else the first sync) creates every declared table`);
  for (const change of tables.changes) lines.push(`${OK}the next sync: ${change}`);
  for (const problem of tables.problems) lines.push(`${FAIL}${problem}`);
  if (tables.tables.length > 0 && tables.changes.length === 0 && tables.problems.length === 0) lines.push(`${OK}${tables.tables.join(', ')}: as declared`);
  return `${lines.join('\n')}\n`;
}

/** The declared tables against the database the sync writes: a change it would refuse fails the check (docs/tables.md). */
async function declaredTables(config: Config, plan: CheckPlan, json: boolean, out: { write(text: string): unknown }): Promise<TablesCheck | undefined> {
  const { checkTables } = await import('../../app/check-tables.ts');
  const tables = await checkTables(config, plan.streams.map((s) => s.stream));
  if (tables && !json) out.write(formatTables(tables));
  return tables;
}

/** The human report of one customer: a status line per step, each problem and warning on its own line with its fix. */
export function formatCheck(result: CustomerCheck, line: (f: Finding) => string): string {
  const lines = [`customer ${result.customer} (key ${result.apiKey})`];
  const findings = (pick: (f: Finding) => boolean) => [
    ...result.problems.filter(pick).map((f) => `${FAIL}${line(f)}`),
    ...result.warnings.filter(pick).map((f) => `${WARN}${line(f)}`),
  ];
  if (result.token) {
    const t = result.token;
    const who = t.jwtCustomer ? `; token customer ${t.jwtCustomer}` : '';
    const scopes = t.scopes ? `; scopes ${t.scopes.join(', ') || '(none)'}` : '';
    lines.push(`${OK}authenticated: token valid for ${t.lifetimeSeconds} s (until ${t.expiresAt})${who}${scopes}`);
  }
  lines.push(...findings((f) => f.kind === 'credentials'));
  const s = result.schema;
  if (s?.source === 'introspection') {
    lines.push(s.valid === s.documents ? `${OK}schema (introspection): ${s.documents} job document(s) valid` : `${FAIL}schema (introspection): ${s.documents - s.valid} of ${s.documents} document(s) in force do not match the live schema`);
  }
  lines.push(...findings((f) => f.kind === 'schema'));
  for (const stream of result.streams) {
    lines.push(...findings((f) => f.stream === stream.name));
    const p = stream.probe;
    for (const detail of stream.leftOut ?? []) lines.push(`${SKIP}stream ${stream.name}: ${detail}`);
    if (stream.skipped) lines.push(`${SKIP}stream ${stream.name}: ${stream.notOffered ? '' : 'not probed: '}${stream.skipped}`);
    else if (p && !p.failure && p.rejected === 0) {
      const window = p.window ? `window [${p.window.from}, ${p.window.to}${p.window.endInclusive ? ']' : ')'}` : "the listing's first page";
      const from = p.parent !== undefined ? `${window} of parent ${p.parent}` : window;
      const size = p.pageSize !== undefined ? `page size ${p.pageSize}; ` : '';
      const run = p.runPageSize !== undefined ? `; a run's page size ${p.runPageSize} accepted` : '';
      lines.push(`${OK}stream ${stream.name}: probe read ${p.records} record(s) from ${from} (${size}${p.more ? 'more pages follow' : 'no more pages'}${run})`);
    }
  }
  for (const op of result.webhooks) {
    lines.push(...findings((f) => f.operation === op.operation));
    if (op.status === 'absent') lines.push(`${SKIP}webhook ${op.operation}: absent (declared in ${op.declaredIn})`);
    else if (op.status === 'valid') lines.push(`${OK}webhook ${op.operation}: ${op.document}`);
    else if (op.status === 'unchecked') lines.push(`${SKIP}webhook ${op.operation}: ${op.document} not validated (no schema)`);
  }
  const warned = result.warnings.length ? ` (${result.warnings.length} warning(s))` : '';
  lines.push(result.ok ? `  => all good${warned}` : `  => ${result.problems.length} problem(s) found${warned}`);
  return `${lines.join('\n')}\n`;
}

/** A configuration error's lines (`file:line:column: what. Fix: how`) as findings, for --json. */
function configFindings(error: ConfigError | UsageError): Finding[] {
  return error.message.split('\n').filter(Boolean).map((text) => {
    const m = /^(.+?):(\d+):(\d+): (.*)$/s.exec(text);
    const [message, fix] = splitFix(m ? m[4]! : text);
    return m ? { kind: 'definitions', file: m[1]!, line: Number(m[2]), column: Number(m[3]), message, ...(fix && { fix }) } : { kind: 'configuration', message, ...(fix && { fix }) };
  });
}

function splitFix(text: string): [string, string | undefined] {
  const at = text.lastIndexOf('. Fix: ');
  return at < 0 ? [text, undefined] : [text.slice(0, at), text.slice(at + '. Fix: '.length)];
}

export const checkCommand: CommandModule = (program, ctx) => {
  program
    .command('check')
    .description(
      'Deploy gate: whether the definitions in force (the built-in streams and webhook documents, with DEFINITIONS_FILE over ' +
        'them) will work against the live API, for each configured customer. Authenticates, validates every document in ' +
        "force against the live schema, compares each stream's record types, paging variables and window bounds with the " +
        "schema's types, reads one page of each stream (a recent window, a small page) through its paging style, page " +
        'contract and record declaration, storing nothing, and lists the webhook operations. One line per problem: what, ' +
        'where (file:line:column), the fix.',
    )
    .option('--customer <id>', 'check only this configured customer')
    .option('--json', 'print one JSON object on stdout: ok (true exactly when the exit code is 0), every problem and warning')
    .addHelpText(
      'after',
      `
Run it before deploying, and after changing a definitions file. Tokens are always obtained fresh (the token cache is
not used); nothing is written to the database. Each stream in force is probed: an incremental stream reads the
last window (window.step or SYNC_STEP) before now - SYNC_SETTLE_DELAY, a full stream the first page of its listing,
at most 10 records a page, then once more at the page size a run asks for (an API limit such as "first must be
between 1 and 100" shows here, not in every run). Webhook operations declared \`absent\` are listed as absent, never
a failure. Warnings (an enum stored without a map, a probe window with no records) do not change the exit code.

Exit codes: 0 the definitions in force work; 1 a problem was found (a document, a type, a probe, a webhook
operation); 77 authentication failed (wrong key or secret); 78 configuration error (DEFINITIONS_FILE or a document
it names cannot be used: each problem as file:line:column).

Examples:
  $ occupancy-sync check
  $ DEFINITIONS_FILE=./occupancy-sync.streams.yaml occupancy-sync check --customer 0b7c6f1e-4d1a-4a57-9a43-5c2d8c1f0e11
  $ occupancy-sync check --json | jq '.customers[] | {customer, ok, problems: [.problems[].message]}'
  $ occupancy-sync check --json > check.json || exit 1     # in CI: fail the deploy`,
    )
    .action((options: CheckOptions) => runCheck(options, ctx));
};

/** The check itself: the configuration, the plan, each customer's probe, and what is printed. */
async function runCheck(options: CheckOptions, ctx: CliContext): Promise<void> {
  const [{ createClient }, { checkCustomer, prepareCheck }, { formatFinding }] = await Promise.all([
    import('../../app/clients.ts'),
    import('../../app/check.ts'),
    import('../../api/diagnose.ts'),
  ]);
  let plan: CheckPlan, config: Config, customers: CustomerConfig[];
  try {
    config = ctx.config();
    requireApi(config);
    customers = selectCustomers(config, options.customer);
    // The definitions and their documents are read and checked before any request (exit 78 when broken).
    plan = prepareCheck(config);
  } catch (error) {
    if (!(options.json && (error instanceof ConfigError || error instanceof UsageError))) throw error;
    // CI reads one JSON object whatever happened: the configuration's problems, each line structured.
    const exitCode = exitCodeFor(error);
    ctx.stdout.write(`${JSON.stringify({ ok: false, exitCode, problems: configFindings(error), customers: [] }, null, 2)}\n`);
    ctx.exitCode = exitCode;
    return;
  }
  if (plan.file && !options.json) {
    const replaced = plan.webhooks.filter((w) => w.replaced && !w.absent).length;
    const absent = plan.webhooks.filter((w) => w.absent).map((w) => w.operation);
    ctx.stdout.write(
      `definitions: ${plan.file} (streams ${plan.streams.map((s) => s.stream.name).join(', ')}; ${replaced} webhook document(s) replaced${absent.length ? `; absent: ${absent.join(', ')}` : ''})\n`,
    );
  }
  const tables = await declaredTables(config, plan, options.json === true, ctx.stdout);
  const logger = ctx.logger().child({ command: 'check' });
  const results: CustomerCheck[] = [];
  for (const customer of customers) {
    const client = createClient(config, customer, 'check', { logger });
    try {
      const result = await checkCustomer(plan, {
        client,
        customerId: customer.id,
        apiKey: customer.apiKey,
        settings: engineSettings(config),
        clock: systemClock,
        logger,
        signal: ctx.signal,
      });
      results.push(result);
      if (!options.json) ctx.stdout.write(formatCheck(result, formatFinding));
    } finally {
      await client.close();
    }
  }
  ctx.exitCode = results.some((r) => r.error?.kind === 'auth') ? ExitCode.AUTH : results.every((r) => r.ok) && !tables?.problems.length ? ExitCode.OK : ExitCode.FAILURE;
  if (options.json) {
    const definitions = {
      file: plan.file ?? null,
      streams: plan.streams.map((s) => ({ name: s.stream.name, kind: s.stream.kind, document: s.document.file, definedIn: s.place?.file ?? null })),
    };
    ctx.stdout.write(`${JSON.stringify({ ok: ctx.exitCode === ExitCode.OK, exitCode: ctx.exitCode, definitions, ...(tables && { tables }), customers: results }, null, 2)}\n`);
  }
}
