import { expect } from 'vitest';
import { parseDocumentSource } from '../../src/api/documents.ts';
import { ConfigError } from '../../src/errors.ts';
import { parseDefinitions, type Definitions } from '../../src/sync/definitions.ts';
import type { AnyStream } from '../../src/sync/stream.ts';

/**
 * The definitions of `text` read as /defs/streams.yaml, whose documents are `documents` (path to text; any other
 * path is ENOENT, as a missing file is), over the streams `under` (a user's file over the built-in ones).
 */
export function parseDefinitionsText(documents: Readonly<Record<string, string>>, text: string, under: ReadonlyArray<AnyStream> = []): Definitions {
  const readText = (path: string) => {
    const found = documents[path];
    if (found === undefined) throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
    return found;
  };
  return parseDefinitions(text, '/defs/streams.yaml', { parseDocument: parseDocumentSource, readText }, under);
}

/** The lines of the ConfigError with which `parse` refuses the definitions; fails when it accepts them. */
export function refusalLines(parse: () => unknown): string[] {
  try {
    parse();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message.split('\n');
  }
  throw new Error('the definitions were accepted');
}
