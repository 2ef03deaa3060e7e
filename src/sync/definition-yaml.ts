import type * as Yaml from 'yaml';
import { ALIAS_FIX, documentValue, yaml } from '../yaml-document.ts';

/**
 * The YAML side of the definitions format (src/sync/definitions.ts): the text parsed once with positions, and every
 * error located in it as `file:line:column: what is wrong. Fix: ...`, one line each. Pure: text in, errors out.
 *
 * JSON is YAML: a text that is JSON (the built-in definitions as the build ships them, dist/jobs/streams.json) is read
 * with JSON.parse, and the YAML parser (70 modules) is loaded only to locate an error in it, so commands that only
 * read the built-in definitions (`status`) start as fast as before they were data.
 */

export type YamlPath = ReadonlyArray<string | number>;


function jsonValue(text: string): { value: unknown } | undefined {
  if (!/^\s*\{/.test(text)) return undefined;
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return undefined;
  }
}

export class YamlSource {
  readonly errors: string[] = [];
  #parsed: { doc: Yaml.Document; lines: Yaml.LineCounter } | undefined;
  /** The parsed value (plain objects, arrays and scalars); undefined when the text is not YAML. */
  readonly value: unknown;

  constructor(
    readonly file: string,
    readonly text: string,
  ) {
    const json = jsonValue(text);
    if (json) {
      this.value = json.value;
      return;
    }
    const { doc, lines } = this.#parse();
    for (const error of doc.errors) {
      const at = lines.linePos(error.pos[0]);
      const where = `${file}:${at.line}:${at.col}`;
      this.errors.push(`${where}: not valid YAML (${error.message.split('\n')[0]}). Fix: correct the syntax`);
    }
    if (this.errors.length > 0) return;
    const read = documentValue(doc, lines);
    if ('problem' in read) this.errors.push(`${file}:${read.line}:${read.col}: ${read.problem}. Fix: ${ALIAS_FIX}`);
    else this.value = read.value;
  }

  #parse(): { doc: Yaml.Document; lines: Yaml.LineCounter } {
    if (!this.#parsed) {
      const { LineCounter, parseDocument } = yaml();
      const lines = new LineCounter();
      this.#parsed = { doc: parseDocument(this.text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true }), lines };
    }
    return this.#parsed;
  }

  /** `file:line:column` of the value at `path` (of its key with `key`), or of the nearest enclosing node that exists. */
  at(path: YamlPath, key = false): string {
    for (let n = path.length; n >= 0; n--) {
      const offset = this.#offsetOf(path.slice(0, n), key && n === path.length);
      if (offset !== undefined) {
        const { line, col } = this.#parse().lines.linePos(offset);
        return `${this.file}:${line}:${col}`;
      }
    }
    return `${this.file}:1:1`;
  }

  #offsetOf(path: YamlPath, key: boolean): number | undefined {
    const { doc } = this.#parse();
    const { isMap, isPair, isScalar } = yaml();
    if (key && path.length > 0) {
      const parent = path.length === 1 ? doc.contents : doc.getIn(path.slice(0, -1), true);
      if (isMap(parent)) {
        const pair = parent.items.find((p) => isPair(p) && isScalar(p.key) && p.key.value === path.at(-1));
        const node = pair?.key as { range?: [number, number, number] } | undefined;
        if (node?.range) return node.range[0];
      }
      return undefined;
    }
    const node = (path.length === 0 ? doc.contents : doc.getIn(path, true)) as { range?: [number, number, number] } | null;
    return node?.range?.[0];
  }

  /** Records one error at `path`: `file:line:column: problem. Fix: fix`. */
  error(path: YamlPath, problem: string, fix: string, options: { key?: boolean } = {}): void {
    this.errors.push(`${this.at(path, options.key)}: ${problem}. Fix: ${fix}`);
  }
}

export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Checks that the value at `path` is a map with only `allowed` keys and all `required` ones; each problem is one
 * error. Returns the map, or undefined when it is not one.
 */
export function mapAt(
  src: YamlSource,
  path: YamlPath,
  value: unknown,
  what: string,
  allowed: readonly string[],
  required: readonly string[] = [],
): Record<string, unknown> | undefined {
  if (!isPlainObject(value)) {
    src.error(path, `${what} must be a map, got ${describeYaml(value)}`, `write it as keys and values (${required.join(', ') || allowed.join(', ')})`);
    return undefined;
  }
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) {
      src.error([...path, key], `unknown key ${JSON.stringify(key)} in ${what}`, `use only ${allowed.join(', ')}`, { key: true });
    }
  }
  for (const key of required) {
    if (value[key] === undefined || value[key] === null) src.error(path, `${what} has no ${key}`, `add ${key}`);
  }
  return value;
}

export function describeYaml(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a map';
  return `${typeof value} ${JSON.stringify(value)}`;
}

/** A string value, or an error (undefined) naming what was expected. */
export function stringAt(src: YamlSource, path: YamlPath, value: unknown, what: string, pattern?: { re: RegExp; rule: string; example: string }): string | undefined {
  if (typeof value !== 'string' || value.length === 0) {
    src.error(path, `${what} must be a non-empty string, got ${describeYaml(value)}`, `give ${what} as text`);
    return undefined;
  }
  if (pattern && !pattern.re.test(value)) {
    src.error(path, `${what} ${JSON.stringify(value)} ${pattern.rule}`, `use e.g. ${pattern.example}`);
    return undefined;
  }
  return value;
}
