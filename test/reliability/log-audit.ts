/** Shared by the per-file log capture and the global audit: what counts as a leaked secret in a log line. */

export interface Leak {
  /** Which kind of secret, never the secret itself. */
  kind: 'registered-secret' | 'known-test-secret' | 'jwt';
  /** The secret masked to its first 4 characters and length, so the report does not leak it again. */
  masked: string;
  /** The leaking line's `msg`, to find the call site. */
  msg: string;
}

export interface CaptureSummary {
  testFile: string;
  lines: number;
  /** Lines the SecretRegistry scrub changed before they were emitted. */
  scrubbed: number;
  secrets: string[];
  leaks: Leak[];
}

// A JWT: three base64url parts, the first two JSON objects ("eyJ" is `{"` encoded).
const JWT = /eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}/g;

const mask = (value: string) => `${value.slice(0, 4)}... (${value.length} characters)`;

/** The leaking line's message, with the leaked value masked so the report does not print it again. */
function msgOf(line: string, value: string): string {
  let msg: string;
  try {
    msg = String((JSON.parse(line) as { msg?: unknown }).msg ?? '');
  } catch {
    msg = line;
  }
  return msg.split(value).join('[LEAKED VALUE]').replace(JWT, '[JWT]').slice(0, 120);
}

/** Searches newline-separated log lines for each secret and (unless `jwt` is false) for JWT-shaped strings. */
export function findLeaks(text: string, registered: Iterable<string>, known: Iterable<string> = [], jwt = true): Leak[] {
  const leaks: Leak[] = [];
  const lines = text.split('\n');
  const search = (values: Iterable<string>, kind: Leak['kind']) => {
    for (const value of new Set(values)) {
      if (value.length < 8 || !text.includes(value)) continue;
      const line = lines.find((l) => l.includes(value)) ?? '';
      leaks.push({ kind, masked: mask(value), msg: msgOf(line, value) });
    }
  };
  search(registered, 'registered-secret');
  search(known, 'known-test-secret');
  if (!jwt) return leaks;
  for (const match of text.matchAll(JWT)) {
    const line = lines.find((l) => l.includes(match[0])) ?? '';
    leaks.push({ kind: 'jwt', masked: mask(match[0]), msg: msgOf(line, match[0]) });
  }
  return leaks;
}
