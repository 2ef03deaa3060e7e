import { describeYaml, isPlainObject, mapAt, stringAt, type YamlPath, type YamlSource } from '../definition-yaml.ts';
import { recordsPathOf, type RecordsPath } from './answer.ts';
import { offset } from './offset.ts';
import { pageNumber } from './page-number.ts';
import { relayEdges } from './relay-edges.ts';
import { relayNodes } from './relay-nodes.ts';
import { single } from './single.ts';
import type { Need, PagingInput, PagingRole, PagingStyle, StyleModule } from './style.ts';
import { token } from './token.ts';

export type { PageAt, PageRead, PagingRead, PagingRole, PagingStyle, VariableRole } from './style.ts';
export { effectivePageSize } from './style.ts';

/**
 * The paging styles, in the order messages list them: the one place a style is registered. Everything else (the
 * names a definitions file may write, their type, what `check` and the probe know of each) comes from the modules.
 */
const MODULES = [single, relayNodes, relayEdges, token, offset, pageNumber] as const;

/** A style's name in a definitions file (the same word as its module's `name` and its parsed `style`). */
export type PagingStyleName = (typeof MODULES)[number]['name'];

export const PAGING_STYLES: readonly PagingStyleName[] = MODULES.map((m) => m.name);

/** The paging styles by their name in a definitions file. */
export const STYLES = Object.fromEntries(MODULES.map((m) => [m.name, m])) as Readonly<Record<PagingStyleName, StyleModule>>;

const GRAPHQL_NAME = /^[_A-Za-z][_0-9A-Za-z]*$/;
const ANSWER_PATH = { re: /^[_A-Za-z][_0-9A-Za-z]*(\.[_A-Za-z][_0-9A-Za-z]*)*$/, rule: 'is not a path of fields', example: 'occupancy or list.nextToken' };
const RECORDS_PATH = { re: /^[_A-Za-z][_0-9A-Za-z]*(\[\])?(\.[_A-Za-z][_0-9A-Za-z]*(\[\])?)*$/, rule: 'is not a records path', example: 'buildings or floorSpaceReadings[].floorSpaces[].readings' };

/**
 * Version 1 of the format named the styles and their variables otherwise (`none`, `cursor` with `pageSize`/`cursor`
 * naming variables, `offset` with `offset`/`limit`): a version-1 map in version-2 words, so a file written for an
 * earlier release keeps working (docs/api-assumptions.md, "Versions").
 */
function fromVersion1(p: Record<string, unknown>): Record<string, unknown> {
  switch (p.style) {
    case 'none':
      return { style: 'single', records: p.records, ...(p.maxPageSize !== undefined && { maxPageSize: p.maxPageSize }) };
    case 'cursor':
      return { style: 'relay-nodes', connection: p.connection, variables: { pageSize: p.pageSize, cursor: p.cursor } };
    case 'offset':
      return { style: 'offset', records: p.records, variables: { pageSize: p.limit, offset: p.offset } };
    default:
      return p;
  }
}
const VERSION1_KEYS: Record<string, string[]> = { none: ['style', 'records'], cursor: ['style', 'connection', 'pageSize', 'cursor'], offset: ['style', 'records', 'offset', 'limit'] };
/** Keys a version-1 map may add: `none` must name the API's cap (a single page without one is refused: definitions.ts). */
const VERSION1_OPTIONAL: Record<string, string[]> = { none: ['maxPageSize'] };

/** Reads a stream's `paging` map: its style, keys and variables; each problem one located error. */
export function pagingAt(src: YamlSource, at: YamlPath, value: unknown, need: Need, version: number): PagingStyle | undefined {
  const styleName = isPlainObject(value) ? value.style : undefined;
  if (version === 1) {
    if (typeof styleName !== 'string' || !(styleName in VERSION1_KEYS)) {
      src.error(isPlainObject(value) ? [...at, 'style'] : at, `paging style ${JSON.stringify(styleName ?? null)} is not one of none, cursor, offset (version 1)`, 'write e.g. paging: { style: cursor, connection: occupancy, pageSize: first, cursor: after }, or move the file to version 2 (docs/api-assumptions.md)');
      return undefined;
    }
    const keys = VERSION1_KEYS[styleName]!;
    if (!mapAt(src, at, value, `${styleName} paging`, [...keys, ...(VERSION1_OPTIONAL[styleName] ?? [])], keys)) return undefined;
    return parseStyle(src, at, fromVersion1(value as Record<string, unknown>), need, true);
  }
  if (typeof styleName !== 'string' || !Object.hasOwn(STYLES, styleName)) {
    src.error(
      isPlainObject(value) ? [...at, 'style'] : at,
      `paging style ${JSON.stringify(styleName ?? null)} is not one of ${PAGING_STYLES.join(', ')}`,
      'write e.g. paging: { style: relay-nodes, connection: occupancy, variables: { pageSize: first, cursor: after } } (docs/api-assumptions.md lists each style)',
    );
    return undefined;
  }
  const module = STYLES[styleName as PagingStyleName];
  const roles = Object.keys(module.roles);
  const allowed = ['style', ...module.keys, ...(roles.length ? ['variables'] : [])];
  const p = mapAt(src, at, value, `${styleName} paging`, allowed, module.required);
  if (!p) return undefined;
  return parseStyle(src, at, p, need, false);
}

function parseStyle(src: YamlSource, at: YamlPath, p: Record<string, unknown>, need: Need, version1: boolean): PagingStyle | undefined {
  const module = STYLES[p.style as PagingStyleName];
  const before = src.errors.length;
  const vars = p.variables;
  const varsAt: YamlPath = version1 ? at : [...at, 'variables'];
  if (vars !== undefined && !version1) {
    const roles = mapAt(src, varsAt, vars, `the variables of ${module.name} paging`, Object.keys(module.roles));
    if (!roles) return undefined;
  }
  const input: PagingInput = {
    src,
    at,
    p,
    variable(role: PagingRole, required: boolean) {
      const name = isPlainObject(vars) ? vars[role] : undefined;
      const where: YamlPath = version1 ? [...at, role === 'pageSize' && module.name === 'offset' ? 'limit' : role] : [...varsAt, role];
      if (name === undefined || name === null) {
        if (required) src.error(version1 ? at : varsAt, `${module.name} paging needs the variable that carries the ${module.roles[role]!.carries}`, `add variables: { ${role}: <the variable's name in the document> }`);
        return undefined;
      }
      if (typeof name !== 'string' || !GRAPHQL_NAME.test(name)) {
        src.error(where, `the ${role} variable ${describeYaml(name)} is not a GraphQL name`, 'use the name the document declares, without $');
        return undefined;
      }
      need(where, name, `the ${module.roles[role]!.carries} variable`);
      return name;
    },
    records(key: string): RecordsPath | undefined {
      const text = stringAt(src, [...at, key], p[key], key, RECORDS_PATH);
      return text ? recordsPathOf(text) : undefined;
    },
    answerPath(key: string, required: boolean) {
      if (p[key] === undefined && !required) return undefined;
      const text = stringAt(src, [...at, key], p[key], key, ANSWER_PATH);
      return text?.split('.');
    },
    count(key: string, min: number) {
      const v = p[key];
      if (v === undefined) return undefined;
      if (typeof v !== 'number' || !Number.isInteger(v) || v < min) {
        src.error([...at, key], `${key} must be a whole number from ${min}, got ${describeYaml(v)}`, `write e.g. ${key}: ${Math.max(min, 100)}`);
        return undefined;
      }
      return v;
    },
  };
  const style = module.parse(input);
  if (style?.pageSize !== undefined && style.maxPageSize !== undefined && style.pageSize > style.maxPageSize) {
    src.error([...at, 'pageSize'], `pageSize ${style.pageSize} is above maxPageSize ${style.maxPageSize}, the most the API answers`, `lower pageSize to ${style.maxPageSize} or less`);
  }
  return src.errors.length > before ? undefined : style;
}
