import type { IncomingMessage } from 'node:http';
import { Refusal } from './refusal.ts';

/**
 * A request whose framing or identity two HTTP implementations could read differently is refused (400) before
 * anything else, whatever server the handler is mounted in. A proxy in front and the receiver behind it must agree on
 * where a request ends and which header counts, or a request hidden in another one's body (request smuggling), or a
 * second value of a header (the proxy checks the first, the receiver reads the last), gets past the proxy.
 *
 * node:http's strict parser (startReceiver pins it, whatever NODE_OPTIONS says) already refuses bare LF and bare CR
 * line endings, obs-fold, Content-Length together with Transfer-Encoding and duplicate Content-Length. What it
 * accepts, and RFC 9112 does not, is checked here from the raw header list: a header that must appear once
 * appearing twice (RFC 9112 3.2: two Host fields are a 400), a Host that is not `host[:port]`, a Transfer-Encoding
 * other than `chunked` alone (RFC 9112 6.1: a coding we do not implement; on HTTP/1.0 any Transfer-Encoding means
 * faulty framing, 6.1 again), and control characters in a header value (which a lenient parser lets through).
 */

/** Headers a request may carry once only: framing, identity, and what the receiver decides on. */
const SINGLE = ['host', 'content-length', 'transfer-encoding', 'content-type', 'content-encoding', 'x-service-signature'];

/** RFC 3986 host (reg-name, IPv4 or a bracketed IPv6 literal) and an optional port, as RFC 9112 3.2 allows in Host. */
const HOST = /^(?:[A-Za-z0-9\-._~!$&'()*+;=%]+|\[[0-9A-Fa-f:.]+\])(?::\d{0,5})?$/;

/** Any control character but horizontal tab (RFC 9110 5.5). */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f]/;

function malformed(problem: string, header?: string): Refusal {
  return new Refusal(400, 'malformed_request', { problem, ...(header !== undefined && { header }) });
}

/**
 * Throws a 400 `malformed_request` Refusal naming the problem, or returns. `alsoSingle`: more header names (lower
 * case) that must not appear twice, e.g. the customers' custom headers.
 */
export function checkFraming(req: IncomingMessage, alsoSingle: Iterable<string> = []): void {
  const single = new Set([...SINGLE, ...alsoSingle]);
  const seen = new Map<string, number>();
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    const count = (seen.get(name) ?? 0) + 1;
    seen.set(name, count);
    if (count > 1 && single.has(name)) throw malformed('duplicate_header', name);
    if (CONTROL.test(raw[i + 1]!)) throw malformed('control_character', name);
  }
  const host = req.headers.host;
  if (host === undefined) {
    if (req.httpVersion !== '1.0') throw malformed('missing_host');
  } else if (!HOST.test(host)) {
    throw malformed('invalid_host');
  }
  const te = req.headers['transfer-encoding'];
  if (te !== undefined) {
    if (req.httpVersion === '1.0') throw malformed('transfer_encoding_in_http_1_0');
    if (req.headers['content-length'] !== undefined) throw malformed('content_length_with_transfer_encoding');
    if (te.trim().toLowerCase() !== 'chunked') throw malformed('unsupported_transfer_encoding');
  }
}
