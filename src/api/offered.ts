import { Kind, print, visit, type ASTNode, type DocumentNode, type FieldNode, type SelectionSetNode } from 'graphql/language';
import { GraphQLResponseError } from '../errors.ts';
import { parseDocumentSource, type LoadedDocument } from './documents.ts';
import { ApiTransportError } from './failure.ts';

/**
 * What the platform's API offers: its object types and their fields, read with a small introspection query, and
 * which fields a document asks for that the API lacks. Streams declared `ifOffered` (docs/api-assumptions.md) are
 * skipped, or their optional fields left out, when the API lacks what they ask for.
 *
 * Written on graphql's language entry only (no type system, no validation: a cron `sync` loads neither, see
 * docs/architecture.md "Start-up"): the answer is a plain map of type names to their fields' named types.
 */

/** Type name -> field name -> the field's named type (lists and non-null unwrapped). */
export type OfferedSchema = {
  query: string;
  types: ReadonlyMap<string, ReadonlyMap<string, string>>;
};

/** A field a document selects that the API's type does not have. */
export interface MissingField {
  /** The type that lacks it (`Query`, `Building`). */
  type: string;
  field: string;
  /** Response keys from `data` down to the field (`['buildings', 'timeZone']`). */
  path: string[];
  node: FieldNode;
}

// Four levels of ofType reach the named type of `[[T!]!]!`; every object type's field names and types.
const TYPE_REF = 'name kind ofType { name kind ofType { name kind ofType { name kind ofType { name kind } } } }';
export const OFFERED_QUERY = parseDocumentSource(
  `query OfferedSchema { __schema { queryType { name } types { name kind fields(includeDeprecated: true) { name type { ${TYPE_REF} } } } } }`,
  '<offered schema>',
);

interface TypeRef {
  name?: string | null;
  kind?: string;
  ofType?: TypeRef | null;
}

function namedOf(ref: TypeRef | null | undefined): string | undefined {
  for (let r = ref; r; r = r.ofType) if (r.name) return r.name;
  return undefined;
}

/** Reads the introspection answer; undefined when it is not one (a server that answers something else). */
export function readOffered(answer: unknown): OfferedSchema | undefined {
  const schema = (answer as { __schema?: { queryType?: { name?: unknown }; types?: unknown } } | null)?.__schema;
  if (!schema || !Array.isArray(schema.types) || typeof schema.queryType?.name !== 'string') return undefined;
  const types = new Map<string, Map<string, string>>();
  for (const t of schema.types as Array<{ name?: unknown; fields?: unknown }>) {
    if (typeof t?.name !== 'string' || !Array.isArray(t.fields)) continue;
    const fields = new Map<string, string>();
    for (const f of t.fields as Array<{ name?: unknown; type?: TypeRef }>) {
      const named = namedOf(f?.type);
      if (typeof f?.name === 'string' && named) fields.set(f.name, named);
    }
    types.set(t.name, fields);
  }
  return { query: schema.queryType.name, types };
}

/** Why the API's offer could not be read: introspection refused (a GraphQL error, a 4xx) or an answer of another shape. */
export type OfferedResult = { ok: true; offered: OfferedSchema } | { ok: false; reason: string };

/**
 * Asks the API what it offers. Refused introspection is a result (the caller runs the streams as declared); a
 * network or auth failure is thrown, as any request's.
 */
export async function fetchOffered(client: { request<T>(document: LoadedDocument, variables?: Record<string, unknown>, options?: { signal?: AbortSignal }): Promise<T> }, signal?: AbortSignal): Promise<OfferedResult> {
  let answer: unknown;
  try {
    answer = await client.request(OFFERED_QUERY, {}, signal ? { signal } : {});
  } catch (error) {
    if (error instanceof GraphQLResponseError) return { ok: false, reason: `the API does not allow introspection (${error.errors[0]?.message ?? error.message})` };
    if (error instanceof ApiTransportError && error.reason === 'client_error') return { ok: false, reason: `the API does not allow introspection (${error.message})` };
    throw error;
  }
  const offered = readOffered(answer);
  return offered ? { ok: true, offered } : { ok: false, reason: 'the API answered the introspection query without a schema' };
}

/**
 * The fields `doc` selects that the offered schema lacks, outermost first (a missing field's own selections are not
 * looked into). Fragments are followed; a selection on a type the schema does not list is not judged.
 */
export function missingFields(offered: OfferedSchema, doc: DocumentNode): MissingField[] {
  const fragments = new Map(doc.definitions.flatMap((d) => (d.kind === Kind.FRAGMENT_DEFINITION ? [[d.name.value, d] as const] : [])));
  const missing: MissingField[] = [];
  const walk = (set: SelectionSetNode | undefined, type: string, path: string[]) => {
    const fields = offered.types.get(type);
    if (!set || !fields) return;
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) {
        const name = selection.name.value;
        if (name.startsWith('__')) continue;
        const key = [...path, selection.alias?.value ?? name];
        const next = fields.get(name);
        if (next === undefined) missing.push({ type, field: name, path: key, node: selection });
        else walk(selection.selectionSet, next, key);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        walk(selection.selectionSet, selection.typeCondition?.name.value ?? type, path);
      } else {
        const fragment = fragments.get(selection.name.value);
        if (fragment) walk(fragment.selectionSet, fragment.typeCondition.name.value, path);
      }
    }
  };
  for (const d of doc.definitions) if (d.kind === Kind.OPERATION_DEFINITION && d.operation === 'query') walk(d.selectionSet, offered.query, []);
  return missing;
}

/** The document without the given field selections (nodes of this very document), printed again as its source. */
export function withoutFields(doc: LoadedDocument, fields: ReadonlyArray<MissingField>): LoadedDocument {
  const drop = new Set<ASTNode>(fields.map((f) => f.node));
  const document = visit(doc.document, { Field: (node) => (drop.has(node) ? null : undefined) }) as DocumentNode;
  return { ...doc, document, source: print(document) };
}
