import { INT4_MAX, INT4_MIN, isTimeZone } from '../store/checks.ts';
import { CANONICAL_FAST } from '../time.ts';
import { describe, parseInstantAs, type TimeFormat } from './time-formats.ts';
import { formatCount } from '../numbers.ts';

/**
 * Record declarations: how one API node becomes one row, field by field, with the type each field must have. A node
 * that breaks its declaration is rejected whole, with the reason: nothing is coerced (`String(null)` is not a floor
 * space, `Number(null)` is not a headcount, epoch milliseconds are not an ISO timestamp) and nothing is invented.
 *
 * Types are those the stores can hold identically on both dialects, so a record that passes here cannot fail later
 * for what it contains (a NUL in Postgres text, a headcount beyond int4, a lone surrogate that is not UTF-8).
 */

export type FieldType =
  /** A non-empty string identifier (GraphQL `ID` serialises as a string). */
  | 'id'
  /** A non-empty string. */
  | 'text'
  /** Any string, empty included. */
  | 'string'
  /** A whole number from 0 to 2,147,483,647 (a Postgres integer). */
  | 'count'
  /**
   * Any whole number JavaScript holds exactly (±9,007,199,254,740,991; a declared table's bigint column), negative
   * included; mapped to a sink's integer column (a floor's `level`), within a Postgres integer (`int4`).
   */
  | 'integer'
  /** Declared tables only: any finite number (a double precision column); GraphQL's `Float`. */
  | 'number'
  /** Declared tables only: true or false, never a string or a number standing for one. */
  | 'boolean'
  /** An IANA time zone name Intl knows (`Europe/London`, `Australia/Adelaide`); an offset such as `+05:30` is none. */
  | 'timeZone'
  /** An instant in the field's `format` (default ISO 8601 with a zone); stored as canonical UTC with milliseconds. */
  | 'timestamp';

export interface FieldSpec {
  /** Where the value is in the node: a field name, or names joined by dots for nested objects. */
  path: string;
  type: FieldType;
  /** A missing or null value becomes null instead of rejecting the record. */
  nullable?: boolean;
  /** `timestamp` fields: how the API writes the instant (src/sync/time-formats.ts). Default `iso`. */
  format?: TimeFormat;
  /**
   * The API's spellings to the stored (canonical) values, e.g. `{ CURRENTLY_OCCUPIED: 'CurrentlyOccupied' }`: a value
   * not in the map is rejected with its spelling named, never stored as it came (reports count canonical values).
   * Booleans and numbers are looked up by their text (`true`, `1`).
   */
  map?: Readonly<Record<string, string>>;
  /**
   * The API may not offer this field (an assumed one, such as `Building.timeZone`): when the live schema lacks it,
   * the field is left out of the document and the column stored NULL (nullable columns only).
   */
  ifOffered?: boolean;
  /** `integer` fields of a sink's Postgres `integer` column: the range narrows to it (set by the definitions loader). */
  int4?: boolean;
}

/** One spec per column of the record type `R`. */
export type RecordSpec<R> = { readonly [K in keyof R]-?: FieldSpec };

export type RecordResult<R> = { ok: true; record: R } | { ok: false; reason: string };

/**
 * Why both databases would not store the string as it is (a NUL: Postgres text refuses it; a lone surrogate: not
 * UTF-8), or undefined when they would.
 */
function storableText(value: string): string | undefined {
  if (value.includes('\u0000')) return 'contains a NUL character';
  if (!value.isWellFormed()) return 'contains a lone surrogate (not valid UTF-8)';
  return undefined;
}

/** What a check returns for a value that breaks its type; the reason is built only then, off the hot path. */
const REJECT = Symbol('reject');

interface Check {
  /** The value to store, or REJECT. */
  accept(value: unknown): unknown;
  reason(value: unknown): string;
}

const nonEmpty = (what: string): Check => ({
  accept: (v) => (typeof v === 'string' && v.length > 0 && storableText(v) === undefined ? v : REJECT),
  reason: (v) => (typeof v === 'string' && v.length > 0 ? storableText(v)! : `expected ${what}, got ${describe(v)}`),
});

const CHECKS: Record<FieldType, Check> = {
  id: nonEmpty('a non-empty string id'),
  text: nonEmpty('a non-empty string'),
  string: {
    accept: (v) => (typeof v === 'string' && storableText(v) === undefined ? v : REJECT),
    reason: (v) => (typeof v === 'string' ? storableText(v)! : `expected a string, got ${describe(v)}`),
  },
  count: {
    accept: (v) => (typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= INT4_MAX ? v : REJECT),
    reason: (v) => `expected a whole number from 0 to ${formatCount(INT4_MAX)}, got ${describe(v)}`,
  },
  integer: {
    accept: (v) => (Number.isSafeInteger(v) ? v : REJECT),
    reason: (v) => `expected a whole number from -9,007,199,254,740,991 to 9,007,199,254,740,991, got ${describe(v)}`,
  },
  number: {
    accept: (v) => (typeof v === 'number' && Number.isFinite(v) ? v : REJECT),
    reason: (v) => `expected a finite number, got ${describe(v)}`,
  },
  boolean: {
    accept: (v) => (typeof v === 'boolean' ? v : REJECT),
    reason: (v) => `expected true or false, got ${describe(v)}`,
  },
  // The store's own rules (src/store/checks.ts), so a record that passes here is never refused there, failing its page.
  timeZone: {
    accept: (v) => (isTimeZone(v) ? v : REJECT),
    reason: (v) =>
      `expected an IANA time zone name (e.g. Europe/London, Asia/Kolkata), got ${describe(v)}: map the platform's spellings to zone names (map: { ... }), or leave the column unmapped (stored NULL)`,
  },
  timestamp: timestampCheck('iso'),
};

function timestampCheck(format: TimeFormat): Check {
  // The last canonical text accepted: a page's records come tick by tick, so most repeat the one before.
  let lastCanonical = '';
  return {
    accept: (v) => {
      // The canonical text needs no parsing: the hot path of every ISO-timed page.
      if (format === 'iso' && typeof v === 'string' && (v === lastCanonical || (CANONICAL_FAST.test(v) && (lastCanonical = v)))) return v;
      const parsed = parseInstantAs(v, format);
      return parsed.ok ? parsed.iso : REJECT;
    },
    reason: (v) => {
      const parsed = parseInstantAs(v, format);
      return parsed.ok ? 'unreadable' : parsed.reason;
    },
  };
}

/** A value map in front of the type's check: the API's spelling is looked up, the canonical value is checked. */
function mappedCheck(map: Readonly<Record<string, string>>, inner: Check): Check {
  const spellings = Object.keys(map);
  const lookup = (v: unknown): string | undefined =>
    typeof v === 'string' || typeof v === 'boolean' || typeof v === 'number' ? (Object.hasOwn(map, String(v)) ? map[String(v)] : undefined) : undefined;
  return {
    accept: (v) => {
      const canonical = lookup(v);
      return canonical === undefined ? REJECT : inner.accept(canonical);
    },
    reason: (v) => {
      const canonical = lookup(v);
      if (canonical !== undefined) return inner.reason(canonical);
      const listed = spellings.length > 6 ? `${spellings.slice(0, 6).join(', ')}, …` : spellings.join(', ');
      return `${describe(v)} is not in the field's map (${listed}); add its spelling to the map in the definitions`;
    },
  };
}

const INT4_CHECK: Check = {
  accept: (v) => (typeof v === 'number' && Number.isInteger(v) && v >= INT4_MIN && v <= INT4_MAX ? v : REJECT),
  reason: (v) => `expected a whole number from ${formatCount(INT4_MIN)} to ${formatCount(INT4_MAX)}, got ${describe(v)}`,
};

function checkOf(field: FieldSpec): Check {
  const base =
    field.type === 'timestamp' && field.format && field.format !== 'iso'
      ? timestampCheck(field.format)
      : field.type === 'integer' && field.int4
        ? INT4_CHECK
        : CHECKS[field.type];
  return field.map ? mappedCheck(field.map, base) : base;
}

/** Where a webhook delivery's item reads the fields of its envelope: `$delivery.Created` (src/sync/deliveries.ts). */
export const DELIVERY_PREFIX = '$delivery.';

/**
 * The path that reads a fan-out stream's parent key (the value its partition sent, src/sync/stream.ts PartitionSpec):
 * an API that answers one parent's children often does not repeat the parent's id in each of them.
 */
export const PARTITION_PATH = '$partition';

/** The context a partition's records are validated with: `$partition` reads its parent key. */
export function partitionContext(parent: string): Record<string, unknown> {
  return { [PARTITION_PATH]: parent };
}

/** A path that names one field of the node itself. */
const isOwnField = (path: string): boolean => path !== PARTITION_PATH && !path.startsWith(DELIVERY_PREFIX) && !path.includes('.');

function reader(path: string): (node: Record<string, unknown>, context: Record<string, unknown> | undefined) => unknown {
  if (path === PARTITION_PATH) return (_node, context) => context?.[PARTITION_PATH];
  if (isOwnField(path)) return (node) => node[path];
  const inContext = path.startsWith(DELIVERY_PREFIX);
  const parts = (inContext ? path.slice(DELIVERY_PREFIX.length) : path).split('.');
  return (node, context) => {
    let value: unknown = inContext ? context : node;
    for (const part of parts) {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
      value = (value as Record<string, unknown>)[part];
    }
    return value;
  };
}

/** Validates one node; `context` is what `$delivery.` paths read (a delivery's envelope). */
export type RecordValidator<R> = (node: unknown, context?: Record<string, unknown>) => RecordResult<R>;

interface CompiledField {
  key: string;
  path: string;
  read: (node: Record<string, unknown>, context: Record<string, unknown> | undefined) => unknown;
  check: Check;
  nullable: boolean;
}

/**
 * Compiles a spec into a validator (once per stream: it runs for every node). The reason names the API field, the
 * rule and what came instead, e.g. `headcount: expected a whole number from 0 to 2,147,483,647, got null`. `how`:
 * the generated validator (below), or the loop it is generated from (the tests hold the two to the same answers).
 */
export function compileRecord<R>(spec: RecordSpec<R>, how: 'generated' | 'loop' = 'generated'): RecordValidator<R> {
  const fields: CompiledField[] = Object.entries(spec as Record<string, FieldSpec>).map(([key, field]) => ({
    key,
    path: field.path,
    read: reader(field.path),
    check: checkOf(field),
    nullable: field.nullable === true,
  }));
  return ((how === 'generated' && generatedValidator(fields)) || loopValidator(fields)) as RecordValidator<R>;
}

const notAnObject = (node: unknown): RecordResult<never> => ({ ok: false, reason: `expected an object, got ${describe(node)}` });
const rejected = (field: CompiledField, raw: unknown): RecordResult<never> => ({ ok: false, reason: `${field.path}: ${field.check.reason(raw)}` });

/** The validator as a loop over the fields: the rule the generated one follows, and its stand-in (below). */
function loopValidator(fields: readonly CompiledField[]): RecordValidator<Record<string, unknown>> {
  return (node, context) => {
    if (node === null || typeof node !== 'object' || Array.isArray(node)) return notAnObject(node);
    const record: Record<string, unknown> = {};
    for (const field of fields) {
      const raw = field.read(node as Record<string, unknown>, context);
      const value = (raw === null || raw === undefined) && field.nullable ? null : field.check.accept(raw);
      if (value === REJECT) return rejected(field, raw);
      // Defined, not assigned: a column named __proto__ is a field like any other, not the record's prototype.
      Object.defineProperty(record, field.key, { value, enumerable: true, writable: true, configurable: true });
    }
    return { ok: true, record };
  };
}

/**
 * The same validator with each field's read, check and store written out in its own statements, the names as
 * literals: a loop reads and writes every field through one keyed access, which V8 serves by its slowest, generic path
 * once a spec has more than four fields, for every value of every node (docs/performance.md, "Instructions per
 * reading"). Names and paths enter the code only as JSON string literals, everything else as arguments. Undefined
 * where the runtime forbids code from strings (`--disallow-code-generation-from-strings`): the loop serves then.
 */
function generatedValidator(fields: readonly CompiledField[]): RecordValidator<Record<string, unknown>> | undefined {
  const lines = ['"use strict";', 'return function validate(node, context) {'];
  lines.push('if (node === null || typeof node !== "object" || Array.isArray(node)) return notAnObject(node);');
  fields.forEach((field, i) => {
    // A plain top-level path is read by name; a nested, context or partition path by its reader.
    const read = isOwnField(field.path) ? `node[${JSON.stringify(field.path)}]` : `r${i}(node, context)`;
    lines.push(`let v${i} = ${read};`);
    const check = `{ const a = c${i}.accept(v${i}); if (a === REJECT) return rejected(f${i}, v${i}); v${i} = a; }`;
    lines.push(field.nullable ? `if (v${i} === null || v${i} === undefined) v${i} = null; else ${check}` : check);
  });
  // "__proto__" written as a literal's name would set the prototype: a computed name defines it like the loop's store.
  const names = fields.map((f, i) => `${f.key === '__proto__' ? '["__proto__"]' : JSON.stringify(f.key)}: v${i}`);
  lines.push(`return { ok: true, record: { ${names.join(', ')} } };`, '};');
  const params = ['REJECT', 'notAnObject', 'rejected', ...fields.flatMap((_, i) => [`f${i}`, `r${i}`, `c${i}`])];
  const args = [REJECT, notAnObject, rejected, ...fields.flatMap((f) => [f, f.read, f.check])];
  try {
    return new Function(...params, lines.join('\n'))(...args) as RecordValidator<Record<string, unknown>>;
  } catch (error) {
    if (error instanceof EvalError) return undefined;
    throw error;
  }
}

/** The API path a record column is read from, for messages (e.g. the cursor field `observedAt` is `created`). */
export function apiPathOf<R>(spec: RecordSpec<R>, key: keyof R & string): string {
  return (spec as Record<string, FieldSpec>)[key]?.path ?? key;
}
