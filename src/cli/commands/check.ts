import { fileURLToPath } from 'node:url';
import { relative, resolve } from 'node:path';
import type { CommandModule } from '../context.ts';
import { requireApi, selectCustomers } from '../../config.ts';
import { ExitCode } from '../../errors.ts';
import { systemClock } from '../../clock.ts';
import type { CustomerCheck } from '../../api/diagnose.ts';
import type { formatMismatch } from '../../api/documents.ts';

const PACKAGE_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
/** The webhook management documents encode assumed mutation names too, so they are checked with the job documents. */
const WEBHOOK_DOCUMENTS_DIR = resolve(PACKAGE_ROOT, 'src/webhooks/graphql');
/** In the order of their files' names, as they were always listed. */
const WEBHOOK_OPERATIONS = ['registerWebhook', 'sendTestEvent', 'updateWebhook', 'webhooks'] as const;

interface CheckOptions {
  customer?: string;
  json?: boolean;
  documents?: string;
}

/** Human report: one status line per step, then each mismatch as `file:line:column: message`. */
export function formatCheck(result: CustomerCheck, mismatchLine: typeof formatMismatch): string {
  const lines = [`customer ${result.customer} (key ${result.apiKey})`];
  const mark = (ok: boolean) => (ok ? '  ok    ' : '  FAIL  ');
  if (result.token) {
    const t = result.token;
    const who = t.jwtCustomer ? `; token customer ${t.jwtCustomer}` : '';
    const scopes = t.scopes ? `; scopes ${t.scopes.join(', ') || '(none)'}` : '';
    lines.push(`${mark(true)}authenticated: token valid for ${t.lifetimeSeconds} s (until ${t.expiresAt})${who}${scopes}`);
  }
  if (result.query) lines.push(`${mark(true)}query ${result.query.operationName}: ${result.query.buildings} building(s)`);
  if (result.schema) {
    const s = result.schema;
    if (s.source === 'unavailable') lines.push(`  warn  schema: ${s.note}`);
    else if (s.mismatches.length === 0) lines.push(`${mark(true)}schema (introspection): ${s.documents} job document(s) valid`);
    else lines.push(`${mark(false)}schema (introspection): ${s.mismatches.length} mismatch(es) in ${s.documents} job document(s):`);
    for (const m of s.mismatches) lines.push(mismatchLine(m));
  }
  for (const problem of result.problems) lines.push(`${mark(false)}${problem}`);
  lines.push(result.ok ? '  => all good' : '  => problems found');
  return `${lines.join('\n')}\n`;
}

export const checkCommand: CommandModule = (program, ctx) => {
  program
    .command('check')
    .description(
      'Check the API setup for each configured customer: authenticate, show the token lifetime and (from the JWT) ' +
        'customer and scopes, run one cheap query, and validate every job and webhook document in force (jobs/*.graphql, src/webhooks/graphql/*.graphql, and those of a definitions file, DEFINITIONS_FILE) against the ' +
        'live schema via introspection, reporting each mismatch as file:line:column: message.',
    )
    .option('--customer <id>', 'check only this configured customer')
    .option('--json', 'print the results as JSON on stdout')
    .option('--documents <dir>', "directory of .graphql job documents (default: the package's jobs/)")
    .addHelpText(
      'after',
      `
Run this first against the real API: the job documents encode assumed query names and fields, and this names
each one the live schema does not have. Tokens are always obtained fresh (the token cache is not used).

Exit codes: 0 all good; 1 a query failed or a document does not match the schema; 77 authentication failed
(wrong key or secret, missing scope); 78 configuration error.

Examples:
  $ occupancy-sync check
  $ occupancy-sync check --customer 0b7c6f1e-4d1a-4a57-9a43-5c2d8c1f0e11
  $ occupancy-sync check --json | jq '.customers[] | {customer, ok}'`,
    )
    .action(async (options: CheckOptions) => {
      const [{ createClient }, { checkCustomer }, { formatMismatch, loadDocument, loadJobDocuments, parseDocumentSource }, { loadStreams }] = await Promise.all([
        import('../../app/clients.ts'),
        import('../../api/diagnose.ts'),
        import('../../api/documents.ts'),
        import('../../app/streams.ts'),
      ]);
      const config = ctx.config();
      requireApi(config);
      const customers = selectCustomers(config, options.customer);
      // Paths relative to the package (jobs/occupancy.graphql) read best; an outside directory keeps its own path.
      const labelFor = (dir: string) => {
        const rel = relative(PACKAGE_ROOT, dir);
        return (name: string) => (rel.startsWith('..') ? resolve(dir, name) : `${rel ? `${rel}/` : ''}${name}`);
      };
      // Syntax errors in a document or the definitions fail here, before any request (ConfigError names
      // file:line:column). Without --documents, the documents in force: the streams' (the user's definitions over
      // the built-ins) and the webhook documents (the user's replacing the built-in ones).
      let documents;
      if (options.documents) {
        const dir = resolve(options.documents);
        documents = loadJobDocuments(dir, labelFor(dir));
      } else {
        const setup = loadStreams(config, { parseDocument: parseDocumentSource });
        if (setup.file && !options.json) {
          const replaced = Object.keys(setup.webhooks).length;
          ctx.stdout.write(`definitions: ${setup.file} (streams ${setup.streams.map((s) => s.name).join(', ')}; ${replaced} webhook document(s) replaced)\n`);
        }
        const webhookPaths = WEBHOOK_OPERATIONS.flatMap((op) => {
          const spec = setup.webhooks[op];
          if (spec && 'absent' in spec) return [];
          return [spec?.document ?? resolve(WEBHOOK_DOCUMENTS_DIR, `${op}.graphql`)];
        });
        const paths = [...new Set([...setup.streams.map((s) => s.document), ...webhookPaths])];
        documents = paths.map((path) => {
          const doc = loadDocument(path);
          const rel = relative(PACKAGE_ROOT, path);
          return rel.startsWith('..') ? doc : { ...doc, file: rel.split('\\').join('/') };
        });
      }
      const logger = ctx.logger().child({ command: 'check' });

      const results: CustomerCheck[] = [];
      for (const customer of customers) {
        const client = createClient(config, customer, 'check', { logger });
        try {
          const result = await checkCustomer({
            client,
            customerId: customer.id,
            apiKey: customer.apiKey,
            documents,
            clock: systemClock,
            logger,
            signal: ctx.signal,
          });
          results.push(result);
          if (!options.json) ctx.stdout.write(formatCheck(result, formatMismatch));
        } finally {
          await client.close();
        }
      }
      if (options.json) {
        ctx.stdout.write(`${JSON.stringify({ ok: results.every((r) => r.ok), customers: results }, null, 2)}\n`);
      }
      ctx.exitCode = results.some((r) => r.error?.kind === 'auth')
        ? ExitCode.AUTH
        : results.every((r) => r.ok)
          ? ExitCode.OK
          : ExitCode.FAILURE;
    });
};
