import { canonicalGuess } from '../statuses.ts';
import {
  getNamedType,
  isEnumType,
  isInterfaceType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  isSpecifiedScalarType,
  isUnionType,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLOutputType,
  type GraphQLSchema,
} from 'graphql';
import type { LoadedDocument } from '../api/documents.ts';
import { answerFields, declaredVariables, inputTypeAt, type AnswerField } from '../api/document-schema.ts';
import type { Finding } from '../api/diagnose.ts';
import { INT4_MAX } from '../store/checks.ts';
import { UNMAPPED } from '../sync/definition-parts.ts';
import { PARTITION_PATH } from '../sync/records.ts';
import type { FieldSpec } from '../sync/records.ts';
import type { AnyStream } from '../sync/stream.ts';
import type { StreamPlace } from './check-places.ts';

/**
 * Whether a stream's declarations fit the live schema's types, before any record is read: each mapped field's
 * schema type against its declared type (a count mapped to an enum, an ISO timestamp mapped to a number), the records
 * path's lists, the paging variables and the paging information the style reads, and the window bounds against the
 * variables that carry them. Pure: the schema, the stream, its document and where it is defined in, findings out.
 */

export interface Fit {
  problems: Finding[];
  warnings: Finding[];
}

/** The shape GraphQL gives a value, in the words a message uses. */
function describeType(type: GraphQLOutputType | GraphQLInputType): string {
  const named = getNamedType(type);
  const what = isEnumType(named) ? 'the enum' : isSpecifiedScalarType(named) ? '' : isScalarType(named) ? 'the custom scalar' : isObjectType(named) ? 'the object type' : isInterfaceType(named) ? 'the interface' : isUnionType(named) ? 'the union' : 'the input type';
  return `${what ? `${what} ` : ''}${String(type)}`;
}

const unwrap = <T extends GraphQLOutputType | GraphQLInputType>(type: T): T => (isNonNullType(type) ? (type.ofType as T) : type);

/** A judgement of one type: fine, or a problem or warning with its fix. */
type Verdict = undefined | { level: 'problem' | 'warning'; message: string; fix: string };

/** `an enum`, `a String`, `an ID`: what a value of the type is, for a message. */
function kindOf(named: GraphQLNamedType): string {
  if (isEnumType(named)) return 'an enum';
  if (isScalarType(named) && !isSpecifiedScalarType(named)) return 'a custom scalar';
  return /^[AEIOU]/.test(named.name) ? `an ${named.name}` : `a ${named.name}`;
}

function fitField(field: string, spec: FieldSpec, entry: AnswerField): Verdict {
  const type = entry.type;
  const target = `${entry.parent}.${entry.name} is ${String(type)}`;
  const inner = unwrap(type);
  if (isListType(inner)) {
    return { level: 'problem', message: `${field} is mapped to a list (${target}), and a column holds one value`, fix: 'map one value of it, or walk the list with [] in the paging records path' };
  }
  const named = getNamedType(type);
  if (isObjectType(named) || isInterfaceType(named) || isUnionType(named)) {
    const sample = isObjectType(named) || isInterfaceType(named) ? Object.keys(named.getFields())[0] : undefined;
    return { level: 'problem', message: `${field} is mapped to an object, not a value (${target})`, fix: `map one of its fields${sample ? ` (e.g. ${spec.path}.${sample})` : ''}` };
  }
  const name = named.name;
  const custom = isScalarType(named) && !isSpecifiedScalarType(named);
  const mapped = `mapped to ${kindOf(named)} (${target})`;
  switch (spec.type) {
    case 'count':
      if (name === 'Int') return undefined;
      if (name === 'Float') return { level: 'warning', message: `${field} is a count ${mapped}: a value with a fraction will be rejected`, fix: 'map a whole number, or accept the rejections' };
      if (custom) return { level: 'warning', message: `${field} is a count ${mapped}, whose values the schema does not describe`, fix: 'make sure it answers whole numbers (the probe below reads real records)' };
      return { level: 'problem', message: `${field} is a count ${mapped}, which holds no whole numbers`, fix: `map ${field} to an Int field (\`occupancy-sync schema ${entry.parent}\` lists them)` };
    case 'integer':
    case 'number':
    case 'boolean':
      return fitValue(field, spec.type, named, mapped, entry.parent);
    case 'timestamp': {
      const format = spec.format ?? 'iso';
      if (name === 'Boolean' || isEnumType(named)) return { level: 'problem', message: `${field} is a timestamp ${mapped}`, fix: `map the field that holds the time (\`occupancy-sync schema ${entry.parent}\`)` };
      if (format === 'epoch-seconds' || format === 'epoch-milliseconds') {
        if (name === 'Int' && format === 'epoch-milliseconds') {
          return { level: 'problem', message: `${field} is a timestamp in epoch-milliseconds ${mapped}, whose 32 bits hold no epoch milliseconds after January 1970`, fix: 'declare format: epoch-seconds if the API answers seconds' };
        }
        return undefined;
      }
      if (name === 'Int' || name === 'Float') {
        return { level: 'problem', message: `${field} is a timestamp in format ${format} ${mapped}: the API answers numbers`, fix: 'declare format: epoch-seconds or epoch-milliseconds for it' };
      }
      return undefined;
    }
    default: {
      if (isEnumType(named)) {
        const values = named.getValues().map((v) => v.name);
        if (spec.map) {
          const missing = values.filter((v) => !Object.hasOwn(spec.map!, v));
          if (missing.length === 0) return undefined;
          return { level: 'warning', message: `${field} is ${mapped}, whose values ${missing.join(', ')} its map does not translate: records with them will be rejected`, fix: `add them to the map (${missing.map((v) => `${v}: ...`).join(', ')})` };
        }
        const views = field === 'occupancyStatus' ? '; the reporting views count only CurrentlyOccupied as occupied (docs/reporting.md)' : '';
        return {
          level: 'warning',
          message: `${field} is ${mapped}: without a map the stored values are its spellings (${values.join(', ')})${views}`,
          fix: `add map: { ${values.map((v) => `${v}: ${field === 'occupancyStatus' ? canonicalGuess(v) : '<stored value>'}`).join(', ')} }`,
        };
      }
      if (name === 'String' || name === 'ID' || custom) return undefined;
      if (spec.map) {
        if (name !== 'Boolean') return undefined;
        const missing = ['true', 'false'].filter((v) => !Object.hasOwn(spec.map!, v));
        return missing.length ? { level: 'warning', message: `${field} is ${mapped}, and its map does not translate ${missing.join(', ')}`, fix: `add ${missing.map((v) => `'${v}': ...`).join(', ')} to the map` } : undefined;
      }
      return { level: 'problem', message: `${field} is declared ${spec.type} (text) and ${mapped}: the API answers ${name === 'Boolean' ? 'booleans' : 'numbers'}`, fix: 'map a text field, or translate the values with a map (map: { ... })' };
    }
  }
}

/** The types of declared tables' fields (docs/tables.md): which GraphQL scalars answer what they accept. */
const FITS: Record<'integer' | 'number' | 'boolean', { fits: readonly string[]; rough?: string; what: string; scalar: string }> = {
  integer: { fits: ['Int'], rough: 'Float', what: 'whole numbers', scalar: 'an Int' },
  number: { fits: ['Int', 'Float'], what: 'numbers', scalar: 'a Float or an Int' },
  boolean: { fits: ['Boolean'], what: 'true or false', scalar: 'a Boolean' },
};

function fitValue(field: string, type: keyof typeof FITS, named: GraphQLNamedType, mapped: string, parent: string): Verdict {
  const { fits, rough, what, scalar } = FITS[type];
  if (fits.includes(named.name)) return undefined;
  if (named.name === rough) return { level: 'warning', message: `${field} is ${type === 'integer' ? 'an' : 'a'} ${type} ${mapped}: a value with a fraction will be rejected`, fix: 'map a whole number, or declare it type: number' };
  if (isScalarType(named) && !isSpecifiedScalarType(named)) {
    return { level: 'warning', message: `${field} is ${type === 'integer' ? 'an' : 'a'} ${type} ${mapped}, whose values the schema does not describe`, fix: `make sure it answers ${what}, not text (the probe below reads real records), or declare it type: string` };
  }
  return { level: 'problem', message: `${field} is ${type === 'integer' ? 'an' : 'a'} ${type} ${mapped}, which holds no ${what}`, fix: `map ${field} to ${scalar} field (\`occupancy-sync schema ${parent}\` lists them)` };
}

/** Whether a named type holds what `want` means: an Int, or a text (String, ID, or a custom scalar). */
function holds(named: GraphQLNamedType, want: 'Boolean' | 'Int' | 'text'): 'yes' | 'maybe' | 'no' {
  if (isScalarType(named) && !isSpecifiedScalarType(named)) return 'maybe';
  if (want === 'text') return named.name === 'String' || named.name === 'ID' ? 'yes' : 'no';
  return named.name === want ? 'yes' : 'no';
}

/** What each part of a stream's fit reads, and where it puts its findings. */
interface FitScope {
  stream: AnyStream;
  doc: LoadedDocument;
  answer: ReturnType<typeof answerFields>;
  place: StreamPlace | undefined;
  fit: Fit;
}

const inDoc = (scope: FitScope, f: AnswerField | { line: number; column: number }) => ({ file: scope.doc.file, line: f.line, column: f.column });
const inDefinitions = (scope: FitScope, path: ReadonlyArray<string | number>, key = false) => (scope.place ? scope.place.at(path, key) : undefined);

export function fitStream(schema: GraphQLSchema, stream: AnyStream, doc: LoadedDocument, place: StreamPlace | undefined, settings: Readonly<Record<string, unknown>>): Fit {
  const scope: FitScope = { stream, doc, answer: answerFields(schema, doc), place, fit: { problems: [], warnings: [] } };
  fitLists(scope);
  fitRecord(scope);
  fitReads(scope);
  const variables = declaredVariables(schema, doc);
  fitPagingVariables(scope, variables);
  if (stream.kind === 'incremental') fitWindow(stream, variables, settings, (path) => inDefinitions(scope, path), scope.fit);
  return scope.fit;
}

/** The lists the style reads the records from must be lists. */
function fitLists(scope: FitScope): void {
  const { stream, answer, fit } = scope;
  const style = stream.paging;
  for (const list of style.lists) {
    const entry = answer.get(list.join('.'));
    if (entry && !isListType(unwrap(entry.type))) {
      fit.problems.push({ kind: 'paging', stream: stream.name, ...inDoc(scope, entry), message: `data.${list.join('.')} is ${describeType(entry.type)}, not a list, and ${style.style} paging reads the records from a list`, fix: 'correct the records path in the definitions (mark each list walked with [])' });
    }
  }
}

/** Each mapped field against the answer: present, not read through a list, and of a type that fits its declaration. */
function fitRecord(scope: FitScope): void {
  const { stream, answer, doc, place, fit } = scope;
  // The lists the records are walked through: a field's `$parent.` steps go up them.
  const levels = [[...stream.paging.records.path]];
  for (const step of stream.paging.records.each) levels.push([...levels.at(-1)!, ...step]);
  for (const [field, spec] of Object.entries(stream.record as Record<string, FieldSpec>)) {
    // A fan-out stream's parent key is the value its partition sent: no field of the answer to compare.
    if (spec.path === UNMAPPED || spec.path === PARTITION_PATH) continue;
    const parts = spec.path.split('.');
    const up = parts.filter((p) => p === '$parent').length;
    const rest = parts.slice(up);
    const level = levels[levels.length - 1 - up];
    if (!level || !answer.has(level.join('.'))) continue; // the records path itself is wrong: the document check says where
    const key = place?.recordKey(field) ?? field;
    const entry = answer.get([...level, ...rest].join('.'));
    if (entry) {
      // A step through a list reads nothing: records.ts follows objects only.
      const through = rest.slice(0, -1).map((_, i) => answer.get([...level, ...rest.slice(0, i + 1)].join('.'))!).find((a) => isListType(unwrap(a.type)));
      if (through) {
        fit.problems.push({
          kind: 'record',
          stream: stream.name,
          ...inDefinitions(scope, ['record', key, 'path']),
          message: `${field} is read from ${spec.path}, through ${through.parent}.${through.name}, which is a list (${String(through.type)}): a column holds one value`,
          fix: 'map a field outside the list, or walk the list with [] in the paging records path',
        });
      } else {
        const verdict = fitField(field, spec, entry);
        if (verdict) (verdict.level === 'problem' ? fit.problems : fit.warnings).push({ kind: 'record', stream: stream.name, ...inDefinitions(scope, ['record', key, 'type']), message: verdict.message, fix: verdict.fix });
      }
      continue;
    }
    for (let i = 0; i < rest.length; i++) {
      if (answer.has([...level, ...rest.slice(0, i + 1)].join('.'))) continue;
      const parent = getNamedType(answer.get([...level, ...rest.slice(0, i)].join('.'))!.type);
      const names = isObjectType(parent) || isInterfaceType(parent) ? Object.keys(parent.getFields()) : [];
      fit.problems.push({
        kind: 'record',
        stream: stream.name,
        ...inDefinitions(scope, ['record', key, 'path']),
        message: `${field} is read from ${spec.path}, and the live schema's ${parent.name} has no field ${rest[i]}${names.length ? ` (its fields: ${names.join(', ')})` : ''}`,
        fix: `map ${field} to a field the type has, and select it in ${doc.file}`,
      });
      break;
    }
  }
}

/** The paging information the style reads must be of the type the style declares for it. */
function fitReads(scope: FitScope): void {
  const { stream, answer, fit } = scope;
  const style = stream.paging;
  for (const read of style.reads) {
    const found = read.paths.map((p) => ({ p, entry: answer.get(p.join('.')) })).find((a) => a.entry);
    if (!found) continue; // not selected, or not in the schema: the loader and the document check say which
    const want = read.holds;
    const named = getNamedType(found.entry!.type);
    if (holds(named, want) === 'no' || isListType(unwrap(found.entry!.type))) {
      fit.problems.push({ kind: 'paging', stream: stream.name, ...inDoc(scope, found.entry!), message: `data.${found.p.join('.')} is ${describeType(found.entry!.type)}, and ${style.style} paging reads ${want === 'text' ? 'a text (String or ID)' : `a ${want}`} there`, fix: 'correct the paging in the definitions, or select the field that carries it' });
    }
  }
}

/** Each paging variable must be declared with the type its role carries (the style says which). */
function fitPagingVariables(scope: FitScope, variables: ReturnType<typeof declaredVariables>): void {
  const { stream, doc, fit } = scope;
  const style = stream.paging;
  for (const [role, name] of Object.entries(style.variableNames)) {
    const declared = name === undefined ? undefined : variables.get(name);
    if (!declared?.type) continue;
    const { type: want, a: what } = style.roles[role]!;
    const verdict = isListType(unwrap(declared.type)) ? 'no' : holds(getNamedType(declared.type), want);
    if (verdict === 'yes') continue;
    const finding: Finding = {
      kind: 'paging',
      stream: stream.name,
      file: doc.file,
      line: declared.line,
      column: declared.column,
      message: `$${name} carries ${what} (paging.variables.${role}) and is declared ${declared.written}; ${what} is ${want === 'Int' ? 'an Int' : 'a String'}`,
      fix: verdict === 'maybe' ? `make sure ${declared.written} takes ${want === 'Int' ? 'a whole number' : 'text'}` : `declare $${name}: ${want === 'Int' ? 'Int' : 'String'} (as the argument it is passed to is typed), or name the right variable in paging.variables.${role}`,
    };
    (verdict === 'maybe' ? fit.warnings : fit.problems).push(finding);
  }
}

/** Two windows whose bounds differ in every format (dates included), to tell which values are window bounds. */
const A = Date.UTC(2026, 0, 1);
const WINDOWS = [{ from: A, to: A + 86_400_000 }, { from: A + 2 * 86_400_000, to: A + 5 * 86_400_000 }];

/** The leaves of a variables value (input objects and lists), with their paths. */
function leaves(value: unknown, path: Array<string | number> = []): Array<{ path: Array<string | number>; value: unknown }> {
  if (Array.isArray(value)) return value.flatMap((v, i) => leaves(v, [...path, i]));
  if (value !== null && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => leaves(v, [...path, k]));
  return [{ path, value }];
}

/** Each window bound the stream sends, against the type of the variable (or input field) it is sent in. */
function fitWindow(
  stream: AnyStream,
  variables: ReturnType<typeof declaredVariables>,
  settings: Readonly<Record<string, unknown>>,
  inDefinitions: (path: ReadonlyArray<string | number>) => { file: string; line: number; column: number } | undefined,
  fit: Fit,
): void {
  const [first, second] = WINDOWS.map((window) => leaves(stream.variables({ settings, window })));
  for (const leaf of first!) {
    const other = second!.find((l) => l.path.join('\u0000') === leaf.path.join('\u0000'));
    if (!other || other.value === leaf.value) continue; // not a window bound
    const [top, ...inner] = leaf.path as [string, ...Array<string | number>];
    const declared = variables.get(top);
    if (!declared?.type) continue;
    const type = inputTypeAt(declared.type, inner);
    if (!type || isListType(unwrap(type))) continue;
    const named = getNamedType(type);
    const custom = isScalarType(named) && !isSpecifiedScalarType(named);
    if (custom) continue;
    const where = `$${top}${inner.map((s) => (typeof s === 'number' ? `[${s}]` : `.${s}`)).join('')}`;
    // The value shown is the bound of a sample window starting 2026-01-01T00:00:00Z, named as such.
    const sample = new Date(WINDOWS[0]!.from).toISOString();
    const sent =
      typeof leaf.value === 'number'
        ? `a number (${leaf.value} for ${sample})`
        : /^\d{4}-\d\d-\d\d/.test(String(leaf.value))
          ? `ISO text (e.g. ${JSON.stringify(leaf.value)})`
          : `text (${JSON.stringify(leaf.value)} for ${sample})`;
    const at = inDefinitions(['variables', ...leaf.path]);
    const problem = (message: string, fix: string) => fit.problems.push({ kind: 'window', stream: stream.name, ...at, message, fix });
    if (typeof leaf.value === 'number') {
      if (named.name === 'Int' && (leaf.value > INT4_MAX || (other.value as number) > INT4_MAX)) {
        problem(`a window bound is sent to ${where} (${describeType(type)}) as ${sent}, epoch milliseconds, which do not fit a 32-bit Int`, "send epoch seconds if the API reads seconds: '{{window.from | epoch-seconds}}'");
      } else if (named.name !== 'Int' && named.name !== 'Float') {
        problem(`a window bound is sent to ${where} (${describeType(type)}) as ${sent}, and the API takes ${named.name === 'String' || named.name === 'ID' ? 'text' : describeType(type)} there`, named.name === 'String' || named.name === 'ID' ? "send it as text: add | string ('{{window.from | epoch-milliseconds | string}}')" : 'send the bound the API reads (docs/api-assumptions.md, "Window bounds")');
      }
    } else if (named.name === 'Int' || named.name === 'Float') {
      const digits = typeof leaf.value === 'string' && /^\d+$/.test(leaf.value);
      problem(
        `a window bound is sent to ${where} (${describeType(type)}) as ${sent}, and the API takes a number there`,
        digits ? 'drop | string from the placeholder' : "send it as a number in the unit the API reads, e.g. '{{window.from | epoch-seconds}}' (or epoch-milliseconds)",
      );
    } else if (isEnumType(named) || named.name === 'Boolean') {
      problem(`a window bound is sent to ${where}, which is ${describeType(type)}`, 'send the bounds to the variables (or input fields) that carry the time');
    }
  }
}
