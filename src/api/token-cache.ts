import { closeSync, fsyncSync, lstatSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { randomBytes } from 'node:crypto';
import { makeDirectory } from '../directory.ts';
import { silentLogger, type Logger } from '../logger.ts';
import { decodeJwtClaims } from './jwt.ts';
import { jsonSyntaxProblem, parseJsonText } from '../strict-json.ts';
import type { TokenInfo, TokenStore } from './token.ts';

/**
 * Keeps bearer tokens between one-shot cron runs, so a run every 5 minutes authenticates about once per token
 * lifetime instead of every run. Off unless TOKEN_CACHE_FILE is set.
 *
 * Safety rules (a token is a credential for its lifetime):
 * - the file holds tokens only, never a key secret;
 * - it is created with mode 0600 and replaced atomically (temporary file + rename), so a crash or a concurrent run
 *   never leaves a half-written file;
 * - it is ignored, with a warning, when it is not a regular file owned by this user with no group/other access,
 *   when it cannot be parsed, or when its token has expired;
 * - entries are keyed by base URL and key name, so a sandbox token is never sent to the real platform.
 */

interface CacheEntry {
  token: string;
  obtainedAt: number;
  expiresAt: number;
}

interface CacheFile {
  version: 1;
  tokens: Record<string, CacheEntry>;
}

function isEntry(value: unknown): value is CacheEntry {
  const v = value as CacheEntry;
  return (
    typeof v === 'object' && v !== null &&
    typeof v.token === 'string' && v.token.length > 0 &&
    Number.isFinite(v.obtainedAt) && Number.isFinite(v.expiresAt)
  );
}

export class FileTokenStore implements TokenStore {
  readonly #path: string;
  readonly #key: string;
  readonly #logger: Logger;

  constructor(path: string, baseUrl: string, apiKey: string, logger: Logger = silentLogger) {
    this.#path = path;
    this.#key = `${baseUrl} ${apiKey}`;
    this.#logger = logger;
  }

  load(now: number): TokenInfo | undefined {
    const entry = this.#read()?.tokens[this.#key];
    if (!isEntry(entry) || entry.expiresAt <= now) return undefined;
    return { ...entry, claims: decodeJwtClaims(entry.token) };
  }

  save(info: TokenInfo): void {
    this.#update((tokens) => {
      tokens[this.#key] = { token: info.token, obtainedAt: info.obtainedAt, expiresAt: info.expiresAt };
    }, info.obtainedAt);
  }

  remove(token: string): void {
    try {
      this.#update((tokens) => {
        if (tokens[this.#key]?.token === token) delete tokens[this.#key];
      });
    } catch (error) {
      this.#logger.warn({ err: error, path: this.#path }, 'could not update the token cache file');
    }
  }

  /** Reads the file if it is safe to trust; anything else is treated as "no cache". */
  #read(): CacheFile | undefined {
    let stat;
    try {
      stat = lstatSync(this.#path);
    } catch {
      return undefined;
    }
    const ownedByUs = typeof process.getuid !== 'function' || stat.uid === process.getuid();
    if (!stat.isFile() || !ownedByUs || (stat.mode & 0o077) !== 0) {
      this.#logger.warn(
        { path: this.#path, mode: (stat.mode & 0o777).toString(8) },
        'ignoring the token cache file: it must be a regular file owned by this user with mode 0600 (run: chmod 600 on it, or delete it)',
      );
      return undefined;
    }
    try {
      const read = parseJsonText(readFileSync(this.#path, 'utf8'));
      if ('syntaxAt' in read) throw new Error(jsonSyntaxProblem(read.syntaxAt));
      const parsed = read.value as CacheFile;
      if (parsed?.version !== 1 || typeof parsed.tokens !== 'object' || parsed.tokens === null) throw new Error('unknown format');
      return parsed;
    } catch (error) {
      this.#logger.warn({ path: this.#path, reason: (error as Error).message }, 'ignoring an unreadable token cache file');
      return undefined;
    }
  }

  #update(change: (tokens: Record<string, CacheEntry>) => void, now?: number): void {
    const tokens: Record<string, CacheEntry> = {};
    for (const [key, entry] of Object.entries(this.#read()?.tokens ?? {})) {
      // Expired entries of other keys are dropped on the way, so the file does not grow forever.
      if (isEntry(entry) && (now === undefined || entry.expiresAt > now)) tokens[key] = entry;
    }
    change(tokens);
    const content: CacheFile = { version: 1, tokens };
    makeDirectory(dirname(this.#path), 0o700);
    const temp = `${this.#path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
    // 'wx' + 0600 at creation: the token is never readable by others, not even between open and chmod.
    const fd = openSync(temp, 'wx', 0o600);
    try {
      writeSync(fd, JSON.stringify(content));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    try {
      renameSync(temp, this.#path);
    } catch (error) {
      rmSync(temp, { force: true });
      throw error;
    }
  }
}
