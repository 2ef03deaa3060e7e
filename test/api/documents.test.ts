import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSchema } from 'graphql';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.ts';
import { loadDocument, loadJobDocuments, parseDocumentSource } from '../../src/api/documents.ts';
import { formatMismatch, validateDocuments } from '../../src/api/document-schema.ts';
import { loadSchemaFile } from '../../src/api/schema.ts';
import { tempDir } from '../support/tmp.ts';

const JOBS = fileURLToPath(new URL('../../jobs/', import.meta.url));

describe('committed job documents', () => {
  it('every jobs/*.graphql document parses and validates against jobs/schema.graphql', () => {
    const schema = loadSchemaFile(join(JOBS, 'schema.graphql'));
    const docs = loadJobDocuments(JOBS, (name) => `jobs/${name}`);
    for (const doc of docs) expect(doc.operationName, `${doc.file} names its operation`).toBeTruthy();
    expect(validateDocuments(schema, docs).map(formatMismatch)).toEqual([]);
  });
});

describe('parseDocumentSource', () => {
  it('derives the operation name and type from the parsed document', () => {
    const doc = parseDocumentSource('# comment\nfragment F on Building { id }\nquery Buildings($n: String) { buildings(nameLike: $n) { ...F } }', 'b.graphql');
    expect(doc).toMatchObject({ file: 'b.graphql', operationName: 'Buildings', operationType: 'query' });
    const anonymous = parseDocumentSource('{ buildings { id } }', 'a.graphql');
    expect(anonymous).toMatchObject({ operationName: undefined, operationType: 'query' });
    expect(parseDocumentSource('mutation M { x }', 'm.graphql').operationType).toBe('mutation');
  });

  it('fails at start on a syntax error, naming file, line and column', () => {
    const source = 'query Q {\n  buildings {\n    id\n  \n';
    expect(() => parseDocumentSource(source, 'jobs/broken.graphql')).toThrow(ConfigError);
    expect(() => parseDocumentSource(source, 'jobs/broken.graphql')).toThrow(/^jobs\/broken\.graphql:5:1: Syntax Error: Expected Name, found <EOF>\./);
  });

  it('rejects a file with two operations, pointing at the second', () => {
    expect(() => parseDocumentSource('query A { a }\nquery B { b }', 'two.graphql')).toThrow(/^two\.graphql:2:1: a job document must hold exactly one operation, found 2/);
    expect(() => parseDocumentSource('fragment F on T { a }', 'none.graphql')).toThrow(/found 0/);
  });
});

describe('loadDocument and validateDocuments', () => {
  let tmp: ReturnType<typeof tempDir> | undefined;
  afterEach(() => tmp?.remove());

  it('names a missing file clearly', () => {
    expect(() => loadDocument('/nonexistent/x.graphql')).toThrow(/\/nonexistent\/x\.graphql: cannot read the GraphQL document \(ENOENT\)/);
  });

  it('reports each mismatch with file, line and column, and skips the SDL file', () => {
    tmp = tempDir();
    writeFileSync(join(tmp.dir, 'schema.graphql'), 'type Query { a: Int }');
    writeFileSync(join(tmp.dir, 'good.graphql'), 'query Good { buildings { id } }\n');
    writeFileSync(join(tmp.dir, 'bad.graphql'), 'query Bad {\n  buildings { id }\n  occupancy(from: "a", to: "b") { nodes { id } }\n}\n');
    writeFileSync(join(tmp.dir, 'notes.txt'), 'not a document');
    const docs = loadJobDocuments(tmp.dir, (name) => `jobs/${name}`);
    expect(docs.map((d) => d.file)).toEqual(['jobs/bad.graphql', 'jobs/good.graphql']);
    const schema = buildSchema('type Query { buildings(nameLike: String): [B!]! }\ntype B { id: ID! }');
    expect(validateDocuments(schema, docs).map(formatMismatch)).toEqual([
      'jobs/bad.graphql:3:3: Cannot query field "occupancy" on type "Query".',
    ]);
  });
});
