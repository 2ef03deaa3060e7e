import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
// graphql's language and error modules by their own entries, not its root: the bundled command then loads only these
// for a sync (the root would bring the type system, validation and execution). What a document needs against a
// schema is in document-schema.ts.
import { GraphQLError } from 'graphql/error';
import { Kind, Source, parse, type DocumentNode, type OperationDefinitionNode } from 'graphql/language';
import { ConfigError } from '../errors.ts';

/** A `.graphql` document parsed once at start; requests send `source` and the derived `operationName`. */
export interface LoadedDocument {
  /** Path (or label) used in messages: `file:line:column`. */
  file: string;
  source: string;
  document: DocumentNode;
  /** Name of the document's operation; sent with every request so the platform picks the right one. */
  operationName: string | undefined;
  operationType: 'query' | 'mutation' | 'subscription';
}

/**
 * Parses a document's text. A syntax error, or a document that does not hold exactly one operation, is a
 * ConfigError naming `file:line:column`, so a broken job fails at start rather than at the first request.
 */
export function parseDocumentSource(source: string, file: string): LoadedDocument {
  let document: DocumentNode;
  try {
    document = parse(new Source(source, file));
  } catch (error) {
    if (error instanceof GraphQLError) {
      const at = error.locations?.[0];
      const where = at ? `${file}:${at.line}:${at.column}` : file;
      throw new ConfigError(`${where}: ${error.message.replace(/\.$/, "")}. Fix: correct the GraphQL syntax in ${file}`, { cause: error });
    }
    throw error;
  }
  const operations = document.definitions.filter(
    (d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION,
  );
  if (operations.length !== 1) {
    const extra = operations[1]?.loc?.startToken;
    const where = extra ? `${file}:${extra.line}:${extra.column}` : file;
    throw new ConfigError(
      `${where}: a job document must hold exactly one operation, found ${operations.length}. Fix: keep one query or mutation per .graphql file (fragments may accompany it)`,
    );
  }
  const operation = operations[0]!;
  return {
    file,
    source,
    document,
    operationName: operation.name?.value,
    operationType: operation.operation as LoadedDocument['operationType'],
  };
}

/** Reads and parses a `.graphql` file (see parseDocumentSource). */
export function loadDocument(path: string): LoadedDocument {
  let source: string;
  try {
    source = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new ConfigError(`${path}: cannot read the GraphQL document (${code}). Fix: check the path and its permissions`, { cause: error });
  }
  return parseDocumentSource(source, path);
}

/** The committed SDL file in jobs/, which is a schema and not a job document. */
export const SCHEMA_FILE_NAME = 'schema.graphql';

/** Every job document in `dir` (`*.graphql`, except the SDL), sorted by name. */
export function loadJobDocuments(dir: string, label: (file: string) => string = (f) => join(dir, f)): LoadedDocument[] {
  const names = readdirSync(dir)
    .filter((name) => name.endsWith('.graphql') && name !== SCHEMA_FILE_NAME)
    .sort();
  return names.map((name) => {
    const doc = loadDocument(join(dir, name));
    const shown = label(name);
    return shown === doc.file ? doc : { ...doc, file: shown };
  });
}
