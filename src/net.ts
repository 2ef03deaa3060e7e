/**
 * Rules about network names and URLs that configuration, flags and messages share: one definition each.
 */

/** RFC 9110 token characters: what an HTTP header name may contain. */
export const HTTP_HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

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
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)([^/@]*)@/i, (_, scheme: string, userinfo: string) => {
    const colon = userinfo.indexOf(':');
    if (colon >= 0) return `${scheme}${userinfo.slice(0, colon)}:***@`;
    return /^postgres(ql)?:\/\/$/i.test(scheme) ? `${scheme}${userinfo}@` : `${scheme}***@`;
  });
}
