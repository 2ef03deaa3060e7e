import { describe, expect, it } from 'vitest';
import { parseDocumentSource } from '../../src/api/documents.ts';
import { argumentNames, permanentReason } from '../../src/api/graphql-errors.ts';

const PAGE = parseDocumentSource(
  'query P($first: Int!, $from: DateTime!) { occupancy(first: $first, from: $from, status: "any") { nodes { id } } }',
  'p.graphql',
);
const facts = { status: 200, hasData: true, document: PAGE.document };

describe('permanentReason', () => {
  it('knows the names the document sends: its variables and the arguments it passes', () => {
    expect([...argumentNames(PAGE.document)].sort()).toEqual(['first', 'from', 'status']);
  });

  it('calls an error permanent when it speaks of one of those arguments with a constraint', () => {
    for (const message of [
      'first must be between 1 and 500',
      'Argument first exceeds the maximum of 500',
      'the value of "from" is not valid',
      '$first: too large',
      'status must be one of any, occupied',
    ]) {
      expect(permanentReason([{ message }], facts), message).toMatch(/refused the value of the argument/);
    }
  });

  it('does not when the name is only a word of the sentence, or there is no constraint', () => {
    for (const message of ['failed to read from the upstream store: must reconnect', 'first attempt timed out', 'first shard is reloading']) {
      expect(permanentReason([{ message }], facts), message).toBeUndefined();
    }
  });

  it('reads codes in the places servers put them, a transient code winning over the words', () => {
    expect(permanentReason([{ message: 'x', extensions: { code: 'BAD_USER_INPUT' } }], facts)).toBe("the API's error code is BAD_USER_INPUT");
    expect(permanentReason([{ message: 'x', extensions: { classification: 'ValidationError' } }], facts)).toBe("the API's error code is ValidationError");
    expect(permanentReason([{ message: 'x', errorType: 'BadRequest' } as never], facts)).toBe("the API's error code is BadRequest");
    expect(permanentReason([{ message: 'first must be reloaded', extensions: { code: 'INTERNAL_SERVER_ERROR' } }], facts)).toBeUndefined();
  });

  it('treats a 4xx with errors, validation messages and errors raised before execution as permanent', () => {
    expect(permanentReason([{ message: 'anything' }], { ...facts, status: 400 })).toMatch(/HTTP 400/);
    expect(permanentReason([{ message: 'Cannot query field "x" on type "Query".' }], facts)).toMatch(/document or its variables/);
    expect(permanentReason([{ message: 'boom', locations: [{ line: 1, column: 1 }] }], { ...facts, hasData: false })).toMatch(/before executing/);
    expect(permanentReason([{ message: 'boom', locations: [{ line: 1, column: 1 }], path: ['occupancy'] }], { ...facts, hasData: false })).toBeUndefined();
  });

  it('ignores entries that are not objects', () => {
    expect(permanentReason([null as never, 'x' as never], facts)).toBeUndefined();
  });
});
