// The language entry, not graphql's root: see documents.ts.
import { visit, type DocumentNode } from 'graphql/language';
import type { GraphQLErrorEntry } from '../errors.ts';

/**
 * Which GraphQL errors are about the request itself (its document or its arguments), so the same request would get
 * the same answer: retrying them, even for a client that retries page-level errors, only delays the report (a
 * "first must be between 1 and 500" was once retried six times). Pure: the answer's errors, status and shape in, a
 * reason (for the message) or undefined out.
 */

/** Codes servers put in `extensions.code` (Apollo, graphql-js users), `extensions.classification` (graphql-java) or `errorType`. */
const PERMANENT_CODES = new Set(
  [
    'BAD_USER_INPUT',
    'GRAPHQL_VALIDATION_FAILED',
    'GRAPHQL_PARSE_FAILED',
    'VALIDATION_ERROR',
    'INVALID_SYNTAX',
    'BAD_REQUEST',
    'INVALID_ARGUMENT',
    'INVALID_INPUT',
    'ARGUMENT_ERROR',
    'OPERATION_RESOLUTION_FAILURE',
    'PERSISTED_QUERY_NOT_SUPPORTED',
    'FORBIDDEN',
    'UNAUTHORIZED',
    'UNAUTHENTICATED',
    'NOT_FOUND',
  ].map(compactCode),
);

/** Codes that say "try again": they keep an error retryable whatever its text says. */
const TRANSIENT_CODES = new Set(
  [
    'INTERNAL_SERVER_ERROR',
    'SERVICE_UNAVAILABLE',
    'UNAVAILABLE',
    'TIMEOUT',
    'TIMED_OUT',
    'REQUEST_TIMEOUT',
    'RATE_LIMITED',
    'THROTTLED',
    'TOO_MANY_REQUESTS',
    'DOWNSTREAM_SERVICE_ERROR',
  ].map(compactCode),
);

/** graphql-js's (and HotChocolate's) validation and input-coercion messages: the document or a variable is refused. */
const VALIDATION_MESSAGE =
  /^(?:Variable "\$[^"]+" (?:got invalid value|of required type|of non-null type)|Argument "[^"]+" (?:has invalid value|of required type|of non-null type)|Unknown argument "|Cannot query field "|Unknown type "|Syntax Error:|Field "[^"]+" argument "[^"]+" of type|Expected value of type|(?:Int|Float|String|Boolean|ID) cannot represent|The (?:argument|variable) `[^`]+`)/;

/** Words that state a constraint on a value. */
const CONSTRAINT =
  /\b(?:must|should|cannot|can't|between|at (?:least|most)|exceeds?|exceeded|greater than|less than|out of (?:range|bounds)|invalid|not valid|not allowed|required|too (?:large|small|many|long)|maximum|minimum|expected)\b/i;

/** The entry's code as the server wrote it, and compacted (`BadRequest`, `BAD_REQUEST` -> `BADREQUEST`) for the lists. */
function codeOf(entry: GraphQLErrorEntry): { shown: string; key: string } | undefined {
  const ext = entry.extensions ?? {};
  const raw = ext.code ?? ext.classification ?? (entry as { errorType?: unknown }).errorType;
  if (typeof raw !== 'string') return undefined;
  return { shown: raw.trim().slice(0, 60), key: compactCode(raw) };
}

function compactCode(code: string): string {
  return code.toUpperCase().replace(/[^A-Z0-9]+/g, '');
}

const namesCache = new WeakMap<DocumentNode, ReadonlySet<string>>();

/** The variables an operation declares and the arguments it passes: the names an argument error speaks of. */
export function argumentNames(document: DocumentNode): ReadonlySet<string> {
  let names = namesCache.get(document);
  if (!names) {
    const found = new Set<string>();
    visit(document, {
      VariableDefinition: (node) => void found.add(node.variable.name.value),
      Argument: (node) => void found.add(node.name.value),
    });
    names = found;
    namesCache.set(document, names);
  }
  return names;
}

function escape(name: string): string {
  return name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** A message whose subject is one of the request's arguments: first word, quoted, `$name`, or after "argument". */
export function namesArgument(message: string, names: ReadonlySet<string>): string | undefined {
  for (const name of names) {
    const n = escape(name);
    const subject = new RegExp(`^\\$?${n}\\b|["'\`$]${n}\\b|\\b(?:argument|variable|parameter|field|input)s? ["'\`]?\\$?${n}\\b`, 'i');
    if (subject.test(message)) return name;
  }
  return undefined;
}

export interface AnswerFacts {
  /** HTTP status of the answer. */
  status: number;
  /** Whether the answer had a `data` member at all (request errors, raised before execution, have none). */
  hasData: boolean;
  document: DocumentNode;
}

/**
 * Why these errors are permanent, as a clause for the message, or undefined when they may be transient. One permanent
 * error is enough: the request would fail on it again.
 */
export function permanentReason(errors: ReadonlyArray<GraphQLErrorEntry>, facts: AnswerFacts): string | undefined {
  if (facts.status >= 400 && facts.status < 500) return `the API refused the request with HTTP ${facts.status}`;
  for (const entry of errors) {
    if (typeof entry !== 'object' || entry === null) continue;
    const code = codeOf(entry);
    if (code && PERMANENT_CODES.has(code.key)) return `the API's error code is ${code.shown}`;
    if (code && TRANSIENT_CODES.has(code.key)) continue;
    const message = typeof entry.message === 'string' ? entry.message : '';
    if (VALIDATION_MESSAGE.test(message)) return 'the API refused the document or its variables';
    const argument = CONSTRAINT.test(message) ? namesArgument(message, argumentNames(facts.document)) : undefined;
    if (argument) return `the API refused the value of the argument ${argument}`;
    // Errors raised before execution (parsing, validation, variable coercion) carry locations, no path, and no data.
    if (!facts.hasData && entry.locations?.length && !entry.path) return 'the API refused the request before executing it';
  }
  return undefined;
}
