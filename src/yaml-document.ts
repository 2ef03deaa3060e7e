import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';

/**
 * The `yaml` package for the files users write (definitions, working time): loaded on first use (synchronously: it is
 * CommonJS; 70 modules that a command reading only JSON never loads), and a document's value with where it failed.
 */

let yamlModule: typeof Yaml | undefined;
export function yaml(): typeof Yaml {
  yamlModule ??= createRequire(import.meta.url)('yaml') as typeof Yaml;
  return yamlModule;
}

/**
 * A parsed document's value, or why it has none and where: an alias whose anchor is not set before it, or aliases
 * that expand past the package's limit (a "billion laughs"). The package throws those from toJS without a place.
 */
export function documentValue(doc: Yaml.Document, lines: Yaml.LineCounter): { value: unknown } | { problem: string; line: number; col: number } {
  try {
    return { value: doc.toJS() as unknown };
  } catch (error) {
    const { visit } = yaml();
    let at = 0;
    visit(doc, {
      Alias(_, node) {
        if (node.resolve(doc) !== undefined) return undefined;
        at = node.range?.[0] ?? 0;
        return visit.BREAK;
      },
    });
    const { line, col } = lines.linePos(at);
    return { problem: (error as Error).message.split('\n')[0]!, line, col };
  }
}

/** The fix for a documentValue problem. */
export const ALIAS_FIX = 'set each anchor (&name) before an alias (*name) uses it, or write the value out';
