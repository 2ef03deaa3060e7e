import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { checkStrictJson } from '../../src/webhooks/strict-json.ts';

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
      fc.property(fc.string({ unit: fc.constantFrom(...'{}[]":,01a-.eE tn\\u'.split('')), maxLength: 30 }), (text) => {
        let parses = true;
        try {
          JSON.parse(text);
        } catch {
          parses = false;
        }
        const result = checkStrictJson(text);
        if (!parses) expect(result).toBeDefined();
        else if (result) expect(result.problem).not.toBe('syntax');
      }),
      { numRuns: 2000 },
    );
  });
});
