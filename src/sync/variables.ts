import { describeYaml, isPlainObject, type YamlPath, type YamlSource } from './definition-yaml.ts';
import { formatInstant, FORMAT_UNIT_MS, isTimeFormat, NUMERIC_FORMATS, TIME_FORMATS, type TimeFormat } from './time-formats.ts';

/**
 * A stream's request variables as written in a definitions file: any JSON value (input objects and lists included),
 * with placeholders anywhere in it. A string that is one placeholder is replaced by the value itself (a number for
 * the epoch formats); placeholders inside a longer string are written into it as text. Compiled once when the file is
 * loaded, each problem located there; applied per request. Pure.
 *
 * Placeholders: `{{window.from}}` and `{{window.to}}` (the bounds of the window being read; incremental streams), with
 * an optional format, `{{window.from | epoch-seconds}}`, and `| string` to send a number as text; `{{settings.NAME}}`
 * (a value of the configuration, e.g. BUILDINGS_NAME_LIKE as `settings.buildingsNameLike`). An unset setting leaves
 * its field (or list element) out.
 */

export interface VariablesInput {
  /** Values of `{{settings.NAME}}` placeholders (undefined: unset). */
  settings: Readonly<Record<string, unknown>>;
  /** The window being read, epoch ms: [from, to). Only for incremental streams. */
  window?: { from: number; to: number };
}

export interface CompiledVariables {
  /** The variables of one request (without the paging variables). */
  build(input: VariablesInput): Record<string, unknown>;
  /** The top-level variable names, for the document check. */
  names: string[];
  /** The formats the window bounds are sent in: windows are aligned to their grid, an inclusive end's slack is `to`'s. */
  bounds: { from?: TimeFormat; to?: TimeFormat };
  /** Names of the settings the variables read (for `softDelete.completeWhenUnset`). */
  settingsRead: Map<string, string>;
}

/** What a stream's definition allows: window placeholders only for incremental streams; the known setting names. */
export interface PlaceholderRules {
  windowed: boolean;
  settings: readonly string[];
}

const UNSET = Symbol('unset');
type Value = unknown | typeof UNSET;
type Node = (input: VariablesInput) => Value;

const PLACEHOLDER = /\{\{([^{}]*)\}\}/g;
const GRAPHQL_NAME = /^[_A-Za-z][_0-9A-Za-z]*$/;

interface Placeholder {
  read: (input: VariablesInput) => Value;
}

/** Compiles the `variables` map of a stream; problems go to `src` at their position. */
export function compileVariables(src: YamlSource, at: YamlPath, value: unknown, rules: PlaceholderRules): CompiledVariables | undefined {
  const before = src.errors.length;
  if (!isPlainObject(value)) {
    src.error(at, `variables must be a map, got ${describeYaml(value)}`, "write e.g. variables: { from: '{{window.from}}' }");
    return undefined;
  }
  for (const key of Object.keys(value)) {
    if (!GRAPHQL_NAME.test(key)) src.error([...at, key], `variable ${JSON.stringify(key)} is not a GraphQL name`, 'use the name the document declares, without $', { key: true });
  }
  const compiler = new VariablesCompiler(src, rules);
  const top = Object.entries(value).map(([k, v]) => [k, compiler.compile([...at, k], v, k)] as const);
  if (src.errors.length > before) return undefined;
  return {
    names: Object.keys(value),
    bounds: compiler.bounds,
    settingsRead: compiler.settingsRead,
    build(input) {
      const out: Record<string, unknown> = {};
      for (const [k, f] of top) {
        const v = f!(input);
        if (v !== UNSET) out[k] = v;
      }
      return out;
    },
  };
}

/** Compiles the values of one `variables` map, collecting the formats of the window bounds and the settings read. */
class VariablesCompiler {
  readonly bounds: CompiledVariables['bounds'] = {};
  readonly settingsRead = new Map<string, string>();
  readonly #src: YamlSource;
  readonly #rules: PlaceholderRules;

  constructor(src: YamlSource, rules: PlaceholderRules) {
    this.#src = src;
    this.#rules = rules;
  }

  /** A value (of the top-level variable `top`), whatever its shape; undefined when it has a problem. */
  compile(where: YamlPath, v: unknown, top: string): Node | undefined {
    if (typeof v === 'string') return this.#string(where, v, top);
    if (Array.isArray(v)) {
      const items = v.map((item, i) => this.compile([...where, i], item, top));
      if (items.some((i) => !i)) return undefined;
      return (input) => items.map((item) => item!(input)).filter((x) => x !== UNSET);
    }
    if (isPlainObject(v)) {
      const fields = Object.entries(v).map(([k, item]) => [k, this.compile([...where, k], item, top)] as const);
      if (fields.some(([, f]) => !f)) return undefined;
      return (input) => {
        const out: Record<string, unknown> = {};
        for (const [k, f] of fields) {
          const value = f!(input);
          if (value !== UNSET) out[k] = value;
        }
        return out;
      };
    }
    return () => v;
  }

  /** A string: itself, one placeholder's value, or text with placeholders written into it. */
  #string(where: YamlPath, v: string, top: string): Node | undefined {
    if (!v.includes('{{') && !v.includes('}}')) return () => v;
    const parts: Array<string | Placeholder> = [];
    let last = 0;
    const whole = /^\{\{[^{}]*\}\}$/.test(v);
    for (const m of v.matchAll(PLACEHOLDER)) {
      parts.push(v.slice(last, m.index));
      const p = this.#placeholder(where, m[1]!, whole, top);
      if (!p) return undefined;
      parts.push(p);
      last = m.index + m[0].length;
    }
    const rest = v.slice(last);
    if (rest.includes('{{') || rest.includes('}}') || parts.some((p) => typeof p === 'string' && (p.includes('{{') || p.includes('}}')))) {
      this.#src.error(where, `${JSON.stringify(v)} has an unclosed or nested placeholder`, 'write each placeholder as {{name}} or {{name | format}}');
      return undefined;
    }
    parts.push(rest);
    if (whole) return (parts[1] as Placeholder).read;
    return (input) => {
      let out = '';
      for (const part of parts) {
        if (typeof part === 'string') out += part;
        else {
          const value = part.read(input);
          if (value === UNSET) return UNSET;
          out += String(value);
        }
      }
      return out;
    };
  }

  #placeholder(where: YamlPath, text: string, whole: boolean, top: string): Placeholder | undefined {
    const [name, ...filters] = text.split('|').map((s) => s.trim());
    const known = ['window.from', 'window.to', ...this.#rules.settings.map((s) => `settings.${s}`)];
    if (!name || !known.includes(name)) {
      this.#src.error(where, `{{${text.trim()}}} is not a placeholder this release knows`, `use one of ${known.map((k) => `{{${k}}}`).join(', ')}`);
      return undefined;
    }
    if (name.startsWith('window.')) return this.#windowBound(where, text, name, filters, whole);
    if (filters.length) {
      this.#src.error(where, `{{${text.trim()}}}: a setting takes no format`, `write {{${name}}}`);
      return undefined;
    }
    const setting = name.slice('settings.'.length);
    this.settingsRead.set(top, setting);
    return { read: (input) => (input.settings[setting] === undefined || input.settings[setting] === null ? UNSET : input.settings[setting]) };
  }

  /** `{{window.from}}` or `{{window.to}}`, with its format and `| string`: each bound sent in one format. */
  #windowBound(where: YamlPath, text: string, name: string, filters: readonly string[], whole: boolean): Placeholder | undefined {
    if (!this.#rules.windowed) {
      this.#src.error(where, `{{${name}}} is only known to an incremental stream`, 'remove it, or make the stream incremental');
      return undefined;
    }
    let format: TimeFormat = 'iso';
    let asText = false;
    for (const filter of filters) {
      if (filter === 'string') asText = true;
      else if (isTimeFormat(filter)) format = filter;
      else {
        this.#src.error(where, `${JSON.stringify(filter)} in {{${text.trim()}}} is neither a time format nor string`, `use one of ${TIME_FORMATS.join(', ')}, optionally followed by | string`);
        return undefined;
      }
    }
    const bound = name === 'window.from' ? 'from' : 'to';
    const previous = this.bounds[bound];
    if (previous !== undefined && previous !== format) {
      this.#src.error(where, `{{${name}}} is sent in two formats (${previous} and ${format})`, 'send each bound in one format');
      return undefined;
    }
    this.bounds[bound] = format;
    const text_ = asText || !whole || !NUMERIC_FORMATS.has(format);
    return { read: (input) => (input.window ? formatInstant(input.window[bound], format, text_) : UNSET) };
  }
}

/** The grid window bounds must lie on so that both are exact in the formats they are sent in. */
export function boundsGrid(bounds: CompiledVariables['bounds']): number {
  return Math.max(bounds.from ? FORMAT_UNIT_MS[bounds.from] : 1, bounds.to ? FORMAT_UNIT_MS[bounds.to] : 1);
}
