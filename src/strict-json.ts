/**
 * A strict JSON check of a delivery's text, before JSON.parse, for what JSON.parse lets through but the stored body
 * must not contain: a duplicate key (JSON.parse keeps the last, SQL's json_extract the first, so the two would read
 * different deliveries from the same bytes), a lone surrogate escape (`"\ud800"`: its value is not UTF-8, so no
 * database stores it faithfully), and a NUL (`\u0000`: Postgres text refuses it, SQLite stores it). Both databases
 * must accept and refuse the same deliveries, for reasons a retry cannot change.
 *
 * One pass over the text, no allocation but one Set per object: it runs once per delivery on the receiver's hot path.
 *
 * With `syntaxOnly` it checks JSON's own syntax (what JSON.parse refuses) and nothing more: `parseJsonText` asks it
 * where a text JSON.parse refused breaks, since V8 says so by quoting the text around it.
 */

export type StrictJsonProblem = 'syntax' | 'duplicate_key' | 'lone_surrogate' | 'nul_character';

export interface StrictJsonFailure {
  problem: StrictJsonProblem;
  /** Character offset in the text. */
  at: number;
}

const enum C {
  Quote = 0x22,
  Backslash = 0x5c,
  Colon = 0x3a,
  Comma = 0x2c,
  OpenBrace = 0x7b,
  CloseBrace = 0x7d,
  OpenBracket = 0x5b,
  CloseBracket = 0x5d,
}

class Fail {
  constructor(
    readonly problem: StrictJsonProblem,
    readonly at: number,
  ) {}
}

/** Returns undefined when the text is one JSON value with none of the problems above, else the first problem. */
export function checkStrictJson(text: string, syntaxOnly = false): StrictJsonFailure | undefined {
  let i = 0;
  const n = text.length;
  const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
  const skip = () => {
    while (i < n && isSpace(text.charCodeAt(i))) i++;
  };
  const hex4 = (at: number): number => {
    if (at + 4 > n) throw new Fail('syntax', at);
    let v = 0;
    for (let k = 0; k < 4; k++) {
      const c = text.charCodeAt(at + k);
      const d = c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x41 && c <= 0x46 ? c - 0x37 : c >= 0x61 && c <= 0x66 ? c - 0x57 : -1;
      if (d < 0) throw new Fail('syntax', at + k);
      v = v * 16 + d;
    }
    return v;
  };
  /** Scans a string starting at its opening quote; returns its raw text (between the quotes) only when asked. */
  const string = (keep: boolean): string | undefined => {
    const start = ++i;
    let pendingHigh = -1;
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === C.Quote) {
        if (pendingHigh >= 0) throw new Fail('lone_surrogate', pendingHigh);
        const raw = keep ? text.slice(start, i) : undefined;
        i++;
        return raw;
      }
      if (c < 0x20) throw new Fail(c === 0 ? 'nul_character' : 'syntax', i);
      if (c === C.Backslash) {
        const e = text.charCodeAt(i + 1);
        if (e === 0x75) {
          const unit = hex4(i + 2);
          if (unit === 0 && !syntaxOnly) throw new Fail('nul_character', i);
          if (!syntaxOnly && unit >= 0xd800 && unit <= 0xdbff) {
            if (pendingHigh >= 0) throw new Fail('lone_surrogate', pendingHigh);
            pendingHigh = i;
          } else if (!syntaxOnly && unit >= 0xdc00 && unit <= 0xdfff) {
            if (pendingHigh < 0) throw new Fail('lone_surrogate', i);
            pendingHigh = -1;
          } else if (pendingHigh >= 0) {
            throw new Fail('lone_surrogate', pendingHigh);
          }
          i += 6;
          continue;
        }
        if (pendingHigh >= 0) throw new Fail('lone_surrogate', pendingHigh);
        if (e !== 0x22 && e !== 0x5c && e !== 0x2f && e !== 0x62 && e !== 0x66 && e !== 0x6e && e !== 0x72 && e !== 0x74) {
          throw new Fail('syntax', i);
        }
        i += 2;
        continue;
      }
      if (pendingHigh >= 0) throw new Fail('lone_surrogate', pendingHigh);
      // Raw surrogates come from a string that was not valid UTF-8 text; the decoder refuses those first.
      i++;
    }
    throw new Fail('syntax', i);
  };
  const number = () => {
    const start = i;
    if (text.charCodeAt(i) === 0x2d) i++;
    const digits = () => {
      const from = i;
      while (i < n && text.charCodeAt(i) >= 0x30 && text.charCodeAt(i) <= 0x39) i++;
      if (i === from) throw new Fail('syntax', i);
    };
    if (text.charCodeAt(i) === 0x30) i++;
    else digits();
    if (text.charCodeAt(i) === 0x2e) {
      i++;
      digits();
    }
    const e = text.charCodeAt(i);
    if (e === 0x65 || e === 0x45) {
      i++;
      const s = text.charCodeAt(i);
      if (s === 0x2b || s === 0x2d) i++;
      digits();
    }
    if (i === start) throw new Fail('syntax', i);
  };
  const literal = (word: string) => {
    if (text.startsWith(word, i)) i += word.length;
    else throw new Fail('syntax', i);
  };
  const value = (depth: number): void => {
    if (depth > 64) throw new Fail('syntax', i);
    skip();
    const c = text.charCodeAt(i);
    if (c === C.OpenBrace) {
      i++;
      skip();
      if (text.charCodeAt(i) === C.CloseBrace) {
        i++;
        return;
      }
      const keys = new Set<string>();
      for (;;) {
        skip();
        if (text.charCodeAt(i) !== C.Quote) throw new Fail('syntax', i);
        const keyAt = i;
        const raw = string(true)!;
        // Compared decoded, as JSON.parse and json_extract compare them: "Id" and "\u0049d" are the same key.
        const key = raw.includes('\\') ? (JSON.parse(`"${raw}"`) as string) : raw;
        if (keys.has(key) && !syntaxOnly) throw new Fail('duplicate_key', keyAt);
        keys.add(key);
        skip();
        if (text.charCodeAt(i) !== C.Colon) throw new Fail('syntax', i);
        i++;
        value(depth + 1);
        skip();
        const next = text.charCodeAt(i);
        i++;
        if (next === C.CloseBrace) return;
        if (next !== C.Comma) throw new Fail('syntax', i - 1);
      }
    }
    if (c === C.OpenBracket) {
      i++;
      skip();
      if (text.charCodeAt(i) === C.CloseBracket) {
        i++;
        return;
      }
      for (;;) {
        value(depth + 1);
        skip();
        const next = text.charCodeAt(i);
        i++;
        if (next === C.CloseBracket) return;
        if (next !== C.Comma) throw new Fail('syntax', i - 1);
      }
    }
    if (c === C.Quote) {
      string(false);
      return;
    }
    if (c === 0x74) return literal('true');
    if (c === 0x66) return literal('false');
    if (c === 0x6e) return literal('null');
    number();
  };
  try {
    value(0);
    skip();
    if (i !== n) throw new Fail('syntax', i);
    return undefined;
  } catch (error) {
    if (error instanceof Fail) return { problem: error.problem, at: error.at };
    throw error;
  }
}

/** Line and column (both from 1) of a character offset in a text. */
export function lineColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let start = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    start = i + 1;
  }
  return { line, column: offset - start + 1 };
}

/**
 * JSON.parse for a text that may hold secrets (a customers file, a token cache, a variable of headers, a recording).
 * V8's SyntaxError quotes the text around the error (`..."k-Token":tok3nSECRET"... is not valid JSON`), so its message
 * must never reach a log or a terminal: a syntax error is reported by where it is, `line:column`, and nothing of the
 * text. Its words are `jsonSyntaxProblem`'s, the same wherever such a text is read.
 */
export function parseJsonText(text: string): { value: unknown } | { syntaxAt: { line: number; column: number } } {
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    const failure = checkStrictJson(text, true);
    return { syntaxAt: lineColumn(text, failure?.at ?? 0) };
  }
}

/** The problem a text JSON.parse refused is reported as: where, never what. */
export function jsonSyntaxProblem(at: { line: number; column: number }): string {
  return `not valid JSON at ${at.line}:${at.column} (line:column; the text is not shown, as it may hold a secret)`;
}
