import type { CommandModule } from '../context.ts';
import { requireApi, selectCustomers } from '../../config.ts';
import { UsageError } from '../../errors.ts';

interface SchemaOptions {
  customer?: string;
  json?: boolean;
}

export const schemaCommand: CommandModule = (program, ctx) => {
  program
    .command('schema')
    .argument('[name]', 'a type (OccupancyEvent), or a query or mutation (occupancyEvents): print only it')
    .description(
      "Print the platform's live GraphQL schema, read by introspection with the configured key (the first customer, or " +
        '--customer): as SDL, or with NAME the fields of that type with their types and arguments, or the arguments and ' +
        'answer of that query or mutation with the types they lead to. Start a definitions file from these facts.',
    )
    .option('--customer <id>', "authenticate with this configured customer's key (default: the first one)")
    .option('--json', 'print the introspection answer as JSON (with NAME: only that type or field)')
    .addHelpText(
      'after',
      `
Nothing is written. The schema is read as the key sees it; a key without ReadPublicApi may see less. An API that does
not allow introspection is said so (exit 1): read its schema in the platform's API Explorer instead.

Exit codes: 0 printed; 1 the API does not allow introspection, or did not answer; 64 NAME is not in the schema (close
names are listed) or bad usage; 77 authentication failed; 78 configuration error.

Examples:
  $ occupancy-sync schema > platform.graphql              # the whole schema, as SDL
  $ occupancy-sync schema Query                           # every query with its arguments
  $ occupancy-sync schema occupancyEvents                 # one query: arguments, answer type and what it leads to
  $ occupancy-sync schema OccupancyEvent                  # one type's fields and their types
  $ occupancy-sync schema --json | jq '.__schema.queryType'`,
    )
    .action(async (name: string | undefined, options: SchemaOptions) => {
      const [{ createClient }, { fetchLiveSchema, describeName }, { printSchema }] = await Promise.all([
        import('../../app/clients.ts'),
        import('../../api/schema.ts'),
        import('graphql'),
      ]);
      const config = ctx.config();
      requireApi(config);
      const customer = selectCustomers(config, options.customer)[0]!;
      const client = createClient(config, customer, 'check', { logger: ctx.logger().child({ command: 'schema' }) });
      let live;
      try {
        live = await fetchLiveSchema(client, ctx.signal);
      } finally {
        await client.close();
      }
      if (name === undefined) {
        ctx.stdout.write(options.json ? `${JSON.stringify(live.introspection, null, 2)}\n` : `${printSchema(live.schema)}\n`);
        return;
      }
      // Checked against the schema first, so an unknown NAME says the same (with close names) in both forms.
      const text = describeName(live.schema, name);
      if (!options.json) {
        ctx.stdout.write(text);
        return;
      }
      const s = live.introspection.__schema;
      const type = s.types.find((t) => t.name === name);
      const roots = [s.queryType, s.mutationType, s.subscriptionType].flatMap((r) => (r ? [s.types.find((t) => t.name === r.name)] : []));
      const fields = roots.flatMap((root) => (root && 'fields' in root ? (root.fields ?? []).filter((f) => f.name === name).map((field) => ({ root: root.name, field })) : []));
      if (!type && fields.length === 0) throw new UsageError(`${JSON.stringify(name)}: not in the introspection answer. Fix: run \`occupancy-sync schema --json\``);
      ctx.stdout.write(`${JSON.stringify({ ...(type && { type }), ...(fields.length && { fields }) }, null, 2)}\n`);
    });
};
