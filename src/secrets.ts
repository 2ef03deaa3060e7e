import { readFileSync, statSync } from 'node:fs';
/**
 * Every secret value the process knows (API secrets, tokens, webhook secrets, header values) is registered here, and
 * `scrub` removes it from any text before that text is logged or printed. A secret must not leak in any form an
 * error message can carry it in: whole, JSON-escaped (`\"`, `\\`, `\/`), URL-encoded, base64, or cut (an excerpt of
 * an error body ending half-way through it). So each secret is matched in all those encodings, and any fragment of
 * MIN_FRAGMENT characters or more of any of them is removed, wherever the text was cut.
 *
 * Matching is a rolling hash over the text (one Set lookup per character, no substring allocation), checked against
 * every GRAM-long piece of every encoding of every secret, then verified and widened character by character.
 */

const CENSOR = '[REDACTED]';
/** Shorter values would censor ordinary words; real secrets and tokens are long. */
export const MIN_SECRET_LENGTH = 8;
/** A fragment of a secret this long or longer is removed (shorter secrets: only whole). */
export const MIN_FRAGMENT = 12;
const GRAM = 6;

/** The forms a secret can take in text that quoted it. */
export function encodingsOf(secret: string): string[] {
  const json = JSON.stringify(secret).slice(1, -1);
  const url = encodeURIComponent(secret);
  const forms = [
    secret,
    json,
    json.replace(/\//g, '\\/'),
    url,
    url.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()),
    url.replace(/%20/g, '+'),
    Buffer.from(secret, 'utf8').toString('base64'),
    Buffer.from(secret, 'utf8').toString('base64url'),
  ];
  return [...new Set(forms)];
}

function gramHash(text: string, at: number): number {
  let h = 0;
  for (let k = 0; k < GRAM; k++) h = (Math.imul(h, 31) + text.charCodeAt(at + k)) | 0;
  return h;
}

/** 31^GRAM as a 32-bit multiplier, to drop the first character of a rolling hash. */
const DROP = (() => {
  let p = 1;
  for (let k = 0; k < GRAM; k++) p = Math.imul(p, 31);
  return p;
})();

interface Gram {
  form: string;
  at: number;
}

/** Observers of every secret registered with any registry (the test suite's log audit, via logger.ts addLogTap). */
export type SecretListener = (value: string) => void;
export const secretListeners = new Set<SecretListener>();

export class SecretRegistry {
  readonly #values = new Set<string>();
  /** Secrets shorter than GRAM + 1 characters cannot be found by gram; matched whole. */
  readonly #short = new Set<string>();
  readonly #grams = new Map<number, Gram[]>();

  add(value: string | undefined | null): void {
    if (!value || value.length < MIN_SECRET_LENGTH || this.#values.has(value)) return;
    this.#values.add(value);
    for (const form of encodingsOf(value)) {
      if (form.length <= GRAM) {
        this.#short.add(form);
        continue;
      }
      for (let at = 0; at + GRAM <= form.length; at++) {
        const h = gramHash(form, at);
        const list = this.#grams.get(h);
        if (list) list.push({ form, at });
        else this.#grams.set(h, [{ form, at }]);
      }
    }
    for (const listener of secretListeners) listener(value);
  }

  delete(value: string | undefined | null): void {
    if (!value || !this.#values.delete(value)) return;
    const forms = new Set(encodingsOf(value));
    for (const form of forms) this.#short.delete(form);
    for (const [h, list] of this.#grams) {
      const kept = list.filter((g) => !forms.has(g.form) || [...this.#values].some((v) => encodingsOf(v).includes(g.form)));
      if (kept.length) this.#grams.set(h, kept);
      else this.#grams.delete(h);
    }
  }

  /** The text with every registered secret, in any of its encodings, and every long enough fragment, removed. */
  scrub(text: string): string {
    if (this.#values.size === 0 || text.length === 0) return text;
    const ranges: Array<[number, number]> = [];
    for (const form of this.#short) {
      for (let i = text.indexOf(form); i >= 0; i = text.indexOf(form, i + 1)) ranges.push([i, i + form.length]);
    }
    if (text.length >= GRAM && this.#grams.size > 0) {
      let h = gramHash(text, 0);
      for (let i = 0; ; i++) {
        const candidates = this.#grams.get(h);
        if (candidates) this.#widen(text, i, candidates, ranges);
        if (i + GRAM >= text.length) break;
        h = (Math.imul(h, 31) - Math.imul(DROP, text.charCodeAt(i)) + text.charCodeAt(i + GRAM)) | 0;
      }
    }
    if (ranges.length === 0) return text;
    ranges.sort((a, b) => a[0] - b[0]);
    let out = '';
    let cursor = 0;
    for (const [start, end] of ranges) {
      if (end <= cursor) continue;
      out += text.slice(cursor, Math.max(cursor, start)) + (start >= cursor ? CENSOR : '');
      cursor = end;
    }
    return out + text.slice(cursor);
  }

  /** Grows each verified match to the longest common run and keeps it when it is long enough to matter. */
  #widen(text: string, i: number, candidates: Gram[], ranges: Array<[number, number]>): void {
    for (const { form, at } of candidates) {
      let k = 0;
      while (k < GRAM && text.charCodeAt(i + k) === form.charCodeAt(at + k)) k++;
      if (k < GRAM) continue;
      let left = 0;
      while (i - left > 0 && at - left > 0 && text.charCodeAt(i - left - 1) === form.charCodeAt(at - left - 1)) left++;
      let right = GRAM;
      while (i + right < text.length && at + right < form.length && text.charCodeAt(i + right) === form.charCodeAt(at + right)) right++;
      const length = left + right;
      if (length >= Math.min(MIN_FRAGMENT, form.length)) ranges.push([i - left, i + right]);
    }
  }

  get size(): number {
    return this.#values.size;
  }
}

/** The most a secret file may hold: far more than any key, secret or token, and read in a moment. */
export const SECRET_FILE_MAX_BYTES = 64 * 1024;

/**
 * Reads a secret kept in a file (a `*_FILE` variable, a `--*-file` flag). Surrounding whitespace, such as the final
 * newline, is not part of the secret. Refused through `fail` (the caller's error type, naming its variable or flag),
 * before anything is read: what is not a regular file (a device such as /dev/zero, a pipe, a directory: read whole,
 * the first would fill the memory), a file larger than SECRET_FILE_MAX_BYTES, a file other users may read; then a
 * file that cannot be read, an empty file.
 */
export function readSecretFile(path: string, fail: (problem: string, fix: string, cause?: unknown) => never): string {
  const unreadable = (error: unknown): never =>
    fail(`cannot read the file (${(error as NodeJS.ErrnoException).code ?? 'error'})`, 'point it at a readable file holding only the secret', error);
  let stat: ReturnType<typeof statSync>;
  try {
    stat = statSync(path);
  } catch (error) {
    return unreadable(error);
  }
  if (!stat.isFile()) fail('not a regular file', 'point it at a file holding only the secret');
  if (stat.size > SECRET_FILE_MAX_BYTES) fail(`the file holds ${stat.size} bytes, more than a secret (${SECRET_FILE_MAX_BYTES} at most)`, 'point it at a file holding only the secret');
  if (stat.mode & 0o007) fail('the secret file is readable by every user', `run: chmod 600 ${path}`);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    return unreadable(error);
  }
  const value = text.trim();
  if (!value) fail('the file is empty', 'write the secret into the file');
  return value;
}
