import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

/**
 * tsx runs our TypeScript through esbuild with whitespace minified, so a CPU profile places every function of a
 * module on line 1 at some column. To name the real line, the module is transformed again with the options tsx uses
 * and the column is looked up in the source map. Best effort: if esbuild cannot be loaded, or the output does not
 * line up with the profile (checked on the named functions), the frame keeps its generated position.
 */

interface Transformed {
  code: string;
  /** Generated column (line 0) -> original line (1-based), sorted by column. */
  segments: Array<[number, number]>;
}

type Esbuild = { transformSync(code: string, options: Record<string, unknown>): { code: string; map: string } };

let esbuild: Esbuild | null | undefined;
function loadEsbuild(): Esbuild | null {
  if (esbuild !== undefined) return esbuild;
  try {
    const fromTsx = createRequire(createRequire(import.meta.url).resolve('tsx/package.json'));
    esbuild = fromTsx('esbuild') as Esbuild;
  } catch {
    esbuild = null;
  }
  return esbuild;
}

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** Decodes the first generated line of a source map's `mappings` into [generated column, original line]. */
function firstLineSegments(mappings: string): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  let column = 0;
  let line = 0;
  for (const segment of mappings.split(';')[0]!.split(',')) {
    if (!segment) continue;
    const values: number[] = [];
    let value = 0;
    let shift = 0;
    for (const ch of segment) {
      const digit = B64.indexOf(ch);
      value += (digit & 31) << shift;
      if (digit & 32) shift += 5;
      else {
        values.push(value & 1 ? -(value >>> 1) : value >>> 1);
        value = 0;
        shift = 0;
      }
    }
    column += values[0]!;
    if (values.length >= 3) {
      line += values[2]!;
      out.push([column, line + 1]);
    }
  }
  return out;
}

const cache = new Map<string, Transformed | null>();

function transformed(path: string): Transformed | null {
  if (cache.has(path)) return cache.get(path)!;
  let result: Transformed | null = null;
  const build = loadEsbuild();
  if (build) {
    try {
      const out = build.transformSync(readFileSync(path, 'utf8'), {
        loader: 'ts',
        sourcefile: path,
        target: `node${process.versions.node}`,
        sourcemap: 'external',
        minifyWhitespace: true,
        keepNames: true,
        format: 'esm',
      });
      const map = JSON.parse(out.map) as { mappings: string };
      result = out.code.includes('\n') && out.code.indexOf('\n') < out.code.length - 1 ? null : { code: out.code, segments: firstLineSegments(map.mappings) };
    } catch {
      result = null;
    }
  }
  cache.set(path, result);
  return result;
}

/** The original line of the function starting at `column` of the generated line 0, if it can be trusted. */
export function originalLine(path: string, column: number, functionName: string): number | undefined {
  const t = transformed(path);
  if (!t) return undefined;
  // Named functions prove the two transforms agree: the name must appear right at (or just before) the column.
  if (functionName && !t.code.slice(Math.max(0, column - functionName.length - 16), column + functionName.length + 16).includes(functionName)) {
    cache.set(path, null);
    return undefined;
  }
  let best: number | undefined;
  for (const [col, line] of t.segments) {
    if (col > column) break;
    best = line;
  }
  return best;
}
