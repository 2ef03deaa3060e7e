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

function msgOf(line: string): string {
  try {
    return String((JSON.parse(line) as { msg?: unknown }).msg ?? '');
  } catch {
    return line.slice(0, 60);
  }
}

/** Searches newline-separated log lines for each secret and for JWT-shaped strings. */
export function findLeaks(text: string, registered: Iterable<string>, known: Iterable<string> = []): Leak[] {
  const leaks: Leak[] = [];
  const lines = text.split('\n');
  const search = (values: Iterable<string>, kind: Leak['kind']) => {
    for (const value of new Set(values)) {
      if (value.length < 8 || !text.includes(value)) continue;
      const line = lines.find((l) => l.includes(value)) ?? '';
      leaks.push({ kind, masked: mask(value), msg: msgOf(line) });
    }
  };
  search(registered, 'registered-secret');
  search(known, 'known-test-secret');
  for (const match of text.matchAll(JWT)) {
    const line = lines.find((l) => l.includes(match[0])) ?? '';
    leaks.push({ kind: 'jwt', masked: mask(match[0]), msg: msgOf(line) });
  }
  return leaks;
}
