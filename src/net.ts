/**
 * Rules about network names and URLs that configuration, flags and messages share: one definition each.
 */

/** RFC 9110 token characters: what an HTTP header name may contain. */
export const HTTP_HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Headers the sender of a delivery sets itself (framing, encoding, the signature): a header a receiver requires must be
 * another, as the platform refuses these among a webhook's additional headers.
 */
export const SENDER_HEADERS: ReadonlySet<string> = new Set(['content-type', 'content-length', 'content-encoding', 'transfer-encoding', 'host', 'connection', 'x-service-signature']);

/** A header value that arrives as written: visible ASCII, spaces inside only (HTTP strips them at either end). */
export const HTTP_HEADER_VALUE = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;

/** localhost, ::1 or 127.x.x.x (brackets of an IPv6 host allowed): where plain http is acceptable (the sandbox). */
export function isLoopback(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h);
}

/**
 * A URL for messages, never with its credentials: a password becomes `***`. A user name alone is kept in a
 * postgres:// URL (it names a role) and hidden in any other (there it may well be a token).
 */
export function redactUrl(url: string): string {
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(url)?.[0];
  if (scheme === undefined) return redactQuery(url);
  const rest = url.slice(scheme.length);
  // The last '@' ends the credentials, wherever it is: a password written with a raw '@', '/' or '?' (not percent-encoded) is
  // still hidden whole. Hiding more than the credentials in a URL that has an '@' elsewhere is the safe side.
  const at = rest.lastIndexOf('@');
  if (at < 0) return redactQuery(url);
  const userinfo = rest.slice(0, at);
  const colon = userinfo.indexOf(':');
  const user = colon >= 0 ? userinfo.slice(0, colon) : userinfo;
  // A "user" that holds a '/', '?' or '#' is more than a user name (the '@' was past the authority): hidden too.
  const role = /[/?#]/.test(user) ? '***' : user;
  const shown = colon >= 0 ? `${role}:***` : /^postgres(ql)?:\/\/$/i.test(scheme) ? role : '***';
  return `${scheme}${shown}@${redactQuery(rest.slice(at + 1))}`;
}

/** Password parameters of a connection URL's query (libpq's `password`, `sslpassword`) shown as `***`. */
function redactQuery(text: string): string {
  return text.replace(/([?&](?:ssl)?password=)[^&#]*/gi, '$1***');
}
