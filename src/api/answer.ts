import type { SecretRegistry } from '../logger.ts';
import { ApiTransportError } from './failure.ts';
import type { HttpResponse } from './transport.ts';

/**
 * Reads the JSON document of an answer by what its bytes are, not by its label: a front end that labels the
 * platform's JSON `text/plain` (or nothing, or `application/octet-stream`) must not stop a sync, while an HTML page
 * (a proxy's maintenance or login page) is never taken for an answer. What cannot be read is retryable, because one
 * such answer is usually a proxy's moment, and the last attempt's message names what came back and the fix.
 */

export interface JsonAnswer {
  json: unknown;
  /** The media type the answer carried when it is not a JSON type (`text/plain`, `(none)`), for a one-time warning. */
  mislabelled?: string;
}

const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);
const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json$/;
const HTML_TYPE = /^(?:text\/html|application\/xhtml\+xml)$/;
/** What an HTML (or XML) page starts with, after white space: the label may be missing or wrong. */
const HTML_START = /^<(?:!doctype|html|head|body|title|\?xml|!--|[a-z][\w-]*[\s>])/i;

/** The media type of an answer: lowercase, without parameters (`; charset=utf-8`), `(none)` when absent. */
export function mediaType(response: HttpResponse): string {
  const raw = response.headers['content-type'];
  const type = String(Array.isArray(raw) ? raw[0] : (raw ?? '')).split(';')[0]!.trim().toLowerCase();
  return type || '(none)';
}

/** A short, secret-free sample of a body for a message: an HTML page's title, or its first characters. */
function sample(text: string, secrets: SecretRegistry | undefined): string {
  const title = /<title[^>]*>([^<]{1,120})<\/title>/i.exec(text)?.[1];
  // A run of base64, base64url or hex this long is a credential or an id, never words: a token of an auth answer cut
  // off is not yet known to the registry. Its first characters say what it was.
  const shown = (title ?? text).replace(/\s+/g, ' ').trim().replace(/[A-Za-z0-9_+=-]{24,}/g, (run) => `${run.slice(0, 4)}…(${run.length} characters)`);
  const scrubbed = secrets ? secrets.scrub(shown) : shown;
  const cut = scrubbed.length > 80 ? `${scrubbed.slice(0, 80)}…` : scrubbed;
  return `${title ? 'titled ' : 'starting '}${JSON.stringify(secrets ? secrets.scrub(cut) : cut)}`;
}

/**
 * The JSON document of `response`, read whatever its Content-Type says. `expected` tells whether a parsed document is
 * what this endpoint answers (a GraphQL response, an auth answer): only then is a non-JSON label forgiven.
 * Throws a retryable ApiTransportError naming what came back: `not_json` for an HTML page, an empty body or text,
 * `invalid_json` for JSON that does not parse (cut off or garbled).
 */
export function readJsonAnswer(
  response: HttpResponse,
  path: string,
  expected: (json: unknown) => boolean,
  secrets?: SecretRegistry,
): JsonAnswer {
  const type = mediaType(response);
  const what = `POST ${path}: the HTTP ${response.status} answer`;
  const bytes = response.body.subarray(0, 3).equals(UTF8_BOM) ? response.body.subarray(3) : response.body;
  const text = bytes.toString('utf8');
  const trimmed = text.trim();
  const fix = 'Fix: if it persists, check API_BASE_URL and any proxy between this host and the platform';
  if (trimmed === '') {
    throw new ApiTransportError(
      'not_json',
      `${what} is empty (Content-Type ${type}, ${response.body.length} bytes) where a JSON document was expected: a proxy or the platform failed to answer. ${fix}`,
      { status: response.status },
    );
  }
  const html = HTML_TYPE.test(type) || HTML_START.test(trimmed);
  if (!html) {
    let json: unknown;
    let parsed = false;
    try {
      json = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
      parsed = true;
    } catch {
      if (JSON_TYPE.test(type) || /^[[{]/.test(trimmed)) {
        // No cause: V8's SyntaxError quotes the text it refused (a token of an auth answer cut off), and a logged
        // error carries its cause's message. The sample above is the redacted view of it.
        throw new ApiTransportError(
          'invalid_json',
          `${what} is not valid JSON (Content-Type ${type}, ${response.body.length} bytes, ${sample(trimmed, secrets)}): it was cut off or garbled on the way. ${fix}`,
          { status: response.status },
        );
      }
    }
    if (parsed && (JSON_TYPE.test(type) || expected(json))) {
      return JSON_TYPE.test(type) ? { json } : { json, mislabelled: type };
    }
  }
  if (html) {
    // Kept in this form: the first part is what operators search logs for.
    throw new ApiTransportError(
      'not_json',
      `${what} is ${HTML_TYPE.test(type) ? JSON.stringify(type) : `an HTML page labelled ${type}`}, not JSON: a proxy or login page answered (${sample(trimmed, secrets)}), ` +
        `or API_BASE_URL does not point at the platform's API. ${fix}`,
      { status: response.status },
    );
  }
  throw new ApiTransportError(
    'not_json',
    `${what} is not the JSON document the API sends (Content-Type ${type}, ${response.body.length} bytes, ${sample(trimmed, secrets)}). ${fix}`,
    { status: response.status },
  );
}

/** A GraphQL response: an object carrying `data` or `errors` (GraphQL over HTTP, "response"). */
export function isGraphQLResponse(json: unknown): json is { data?: unknown; errors?: unknown } {
  return typeof json === 'object' && json !== null && !Array.isArray(json) && ('data' in json || 'errors' in json);
}
