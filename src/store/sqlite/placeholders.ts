/**
 * Translates Postgres-style `$1`, `$2` placeholders into SQLite's anonymous `?`, reordering (and repeating) the
 * parameters to match, so `store.query()` takes the same SQL text on both dialects. String literals, quoted
 * identifiers and comments are copied untouched.
 */
export function dollarToQuestion(text: string, params: readonly unknown[]): { text: string; params: unknown[] } {
  let out = '';
  const ordered: unknown[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === "'" || c === '"' || c === '`') {
      const end = closing(text, i, c);
      out += text.slice(i, end);
      i = end;
    } else if (c === '-' && text[i + 1] === '-') {
      const nl = text.indexOf('\n', i);
      const end = nl === -1 ? text.length : nl;
      out += text.slice(i, end);
      i = end;
    } else if (c === '/' && text[i + 1] === '*') {
      const close = text.indexOf('*/', i + 2);
      const end = close === -1 ? text.length : close + 2;
      out += text.slice(i, end);
      i = end;
    } else if (c === '$' && /[0-9]/.test(text[i + 1] ?? '')) {
      let j = i + 1;
      while (j < text.length && /[0-9]/.test(text[j]!)) j++;
      const n = Number(text.slice(i + 1, j));
      if (n < 1 || n > params.length) {
        throw new RangeError(`placeholder $${n} has no parameter (${params.length} given)`);
      }
      ordered.push(params[n - 1]);
      out += '?';
      i = j;
    } else {
      out += c;
      i++;
    }
  }
  return { text: out, params: ordered };
}

/** Index just past the quoted section starting at `start`; a doubled quote is an escaped quote. */
function closing(text: string, start: number, quote: string): number {
  let i = start + 1;
  while (i < text.length) {
    if (text[i] === quote) {
      if (text[i + 1] === quote) i += 2;
      else return i + 1;
    } else i++;
  }
  return text.length;
}
