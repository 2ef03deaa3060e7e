import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { checkStrictJson, jsonSyntaxProblem, parseJsonText } from '../../src/strict-json.ts';


/** Short texts of JSON's own characters, and whether JSON.parse takes one: the oracle of the property tests. */
const jsonish = fc.string({ unit: fc.constantFrom(...'{}[]":,01a-.eE tn\\u'.split('')), maxLength: 30 });
function parses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

describe('strict JSON check of a delivery', () => {
  it('accepts what JSON.parse accepts when there is no duplicate key, lone surrogate or NUL', () => {
    fc.assert(
      fc.property(fc.jsonValue({ noUnicodeString: false }), (value) => {
        const text = JSON.stringify(value);
        const hasNul = text.includes('\\u0000');
        const result = checkStrictJson(text);
        if (!hasNul) expect(result).toBeUndefined();
      }),
      { numRuns: 500 },
    );
    expect(checkStrictJson(' {"a" : [1, -2.5e3, true, false, null, "\\u00e9\\ud83d\\ude00"]}\n')).toBeUndefined();
  });

  it.each([
    ['{"Id":"a","Id":"b"}', 'duplicate_key'],
    ['{"x":{"k":1,"k":2}}', 'duplicate_key'],
    ['{"Id":"a","\\u0049d":"b"}', 'duplicate_key'],
    ['{"s":"\\ud800"}', 'lone_surrogate'],
    ['{"s":"\\udc00"}', 'lone_surrogate'],
    ['{"s":"\\ud800x"}', 'lone_surrogate'],
    ['{"\\ud800":1}', 'lone_surrogate'],
    ['{"s":"a\\u0000b"}', 'nul_character'],
    ['{"s":"a\u0000b"}', 'nul_character'],
    ['{"s":"tab\there"}', 'syntax'],
    ['{"a":1,}', 'syntax'],
    ['{"a":01}', 'syntax'],
    ['[1] [2]', 'syntax'],
    ["{'a':1}", 'syntax'],
    ['', 'syntax'],
  ])('refuses %j as %s', (text, problem) => {
    expect(checkStrictJson(text)?.problem).toBe(problem);
  });

  it('agrees with JSON.parse on syntax for random text', () => {
    fc.assert(
      fc.property(jsonish, (text) => {
        const result = checkStrictJson(text);
        if (!parses(text)) expect(result).toBeDefined();
        else if (result) expect(result.problem).not.toBe('syntax');
      }),
      { numRuns: 2000 },
    );
  });
});

describe('a text that may hold secrets, parsed: a syntax error says where, never what', () => {
  it('with syntaxOnly, refuses exactly what JSON.parse refuses (duplicate keys, lone surrogates and NUL escapes are JSON)', () => {
    fc.assert(
      fc.property(jsonish, (text) => {
        expect(checkStrictJson(text, true) === undefined).toBe(parses(text));
      }),
      { numRuns: 2000 },
    );
    expect(checkStrictJson('{"a":1,"a":"\\ud800\\u0000"}', true)).toBeUndefined();
  });

  it('names the line and column of the error and no part of the text', () => {
    const text = '[\n  {\n    "id": "x",\n    "webhookHeaders": {"X-Webhook-Token":tok3nSECRETvalue42}\n  }\n]\n';
    const read = parseJsonText(text);
    const column = text.split('\n')[3]!.indexOf('tok3n') + 1;
    expect(read).toEqual({ syntaxAt: { line: 4, column } });
    const problem = jsonSyntaxProblem((read as { syntaxAt: { line: number; column: number } }).syntaxAt);
    expect(problem).toBe(`not valid JSON at 4:${column} (line:column; the text is not shown, as it may hold a secret)`);
    expect(problem).not.toMatch(/tok3n|SECRET|value42/);
    expect(parseJsonText('{"a":1,"a":2}')).toEqual({ value: { a: 2 } });
    expect(parseJsonText('{"a":')).toEqual({ syntaxAt: { line: 1, column: 6 } });
  });
});
