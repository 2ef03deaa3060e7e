import { describe, expect, it } from 'vitest';
import { YamlSource } from '../../src/sync/definition-yaml.ts';
import { boundsGrid, compileVariables, type PlaceholderRules } from '../../src/sync/variables.ts';

/**
 * A stream's request variables (src/sync/variables.ts): placeholders anywhere in any JSON value, checked when the file
 * is loaded (each problem at its file:line:column) and applied per request. Pure: YAML text in, variables out.
 */

const FILE = '/defs/streams.yaml';
const WINDOWED: PlaceholderRules = { windowed: true, settings: ['buildingsNameLike'] };
// 2026-01-08T10:00:00.000Z to 11:00; the epoch values written out so a unit mistake cannot agree with itself.
const WINDOW = { from: Date.UTC(2026, 0, 8, 10), to: Date.UTC(2026, 0, 8, 11) };

/** Compiles the `variables:` of `text` (a YAML map with that one key); errors are the located lines. */
function compile(text: string, rules: PlaceholderRules = WINDOWED) {
  const src = new YamlSource(FILE, text);
  expect(src.errors).toEqual([]);
  const compiled = compileVariables(src, ['variables'], (src.value as { variables: unknown }).variables, rules);
  return { compiled, errors: src.errors };
}

function build(text: string, settings: Record<string, unknown> = {}, window: { from: number; to: number } | undefined = WINDOW) {
  const { compiled, errors } = compile(text);
  expect(errors).toEqual([]);
  return compiled!.build({ settings, ...(window && { window }) });
}

describe('placeholders anywhere in the variables', () => {
  it('fills nested input objects and lists, leaving every other value as written', () => {
    const text = [
      'variables:',
      '  filter:',
      '    observed:',
      "      from: '{{window.from | epoch-seconds}}'",
      "      before: '{{window.to | epoch-seconds}}'",
      '    kinds: [OCCUPANCY, { at: "{{window.from | epoch-seconds}}" }]',
      '    limit: 7',
      '    strict: true',
      '    nothing: null',
      "  ranges: ['{{window.from | epoch-seconds | string}}', ['{{window.to | epoch-seconds}}']]",
    ].join('\n');
    expect(build(text)).toEqual({
      filter: {
        observed: { from: 1767866400, before: 1767870000 },
        kinds: ['OCCUPANCY', { at: 1767866400 }],
        limit: 7,
        strict: true,
        nothing: null,
      },
      ranges: ['1767866400', [1767870000]],
    });
  });

  it('sends a bound in each format, and `| string` sends a number as text', () => {
    const sent = (format: string) => build(`variables:\n  from: '{{window.from | ${format}}}'\n  to: '{{window.to | ${format}}}'\n`);
    expect(build("variables:\n  from: '{{window.from}}'\n  to: '{{window.to}}'\n")).toEqual({ from: '2026-01-08T10:00:00.000Z', to: '2026-01-08T11:00:00.000Z' });
    expect(sent('iso')).toEqual({ from: '2026-01-08T10:00:00.000Z', to: '2026-01-08T11:00:00.000Z' });
    expect(sent('iso-seconds')).toEqual({ from: '2026-01-08T10:00:00Z', to: '2026-01-08T11:00:00Z' });
    expect(sent('epoch-seconds')).toEqual({ from: 1767866400, to: 1767870000 });
    expect(sent('epoch-milliseconds')).toEqual({ from: 1767866400000, to: 1767870000000 });
    expect(sent('epoch-seconds | string')).toEqual({ from: '1767866400', to: '1767870000' });
    expect(sent('epoch-milliseconds | string')).toEqual({ from: '1767866400000', to: '1767870000000' });
    // `| string` on a format that is text already changes nothing.
    expect(sent('iso-seconds | string')).toEqual({ from: '2026-01-08T10:00:00Z', to: '2026-01-08T11:00:00Z' });
    // Whole days: a date bound is the day's text, and it puts the windows on a grid of days.
    const days = compile("variables:\n  day: '{{window.from | date}}'\n  until: '{{window.to | date}}'\n").compiled!;
    expect(days.build({ settings: {}, window: { from: Date.UTC(2026, 0, 8), to: Date.UTC(2026, 0, 9) } })).toEqual({ day: '2026-01-08', until: '2026-01-09' });
    expect(days.bounds).toEqual({ from: 'date', to: 'date' });
    expect(boundsGrid(days.bounds)).toBe(86_400_000);
    // The grid is the coarser of the two bounds' units.
    expect(boundsGrid(compile("variables:\n  a: '{{window.from | iso-seconds}}'\n  b: '{{window.to}}'\n").compiled!.bounds)).toBe(1000);
    expect(boundsGrid(compile("variables:\n  a: '{{window.from | epoch-milliseconds}}'\n").compiled!.bounds)).toBe(1);
    expect(boundsGrid(compile("variables:\n  a: '{{window.from}}'\n  b: '{{window.to | date}}'\n").compiled!.bounds)).toBe(86_400_000);
  });

  it('writes a placeholder inside a longer string into it as text, numbers included', () => {
    const text = [
      'variables:',
      "  where: 'observedAt >= {{window.from}} AND observedAt < {{window.to}}'",
      "  like: 'name LIKE {{settings.buildingsNameLike}}'",
    ].join('\n');
    expect(build(text, { buildingsNameLike: 'HQ%' })).toEqual({
      where: 'observedAt >= 2026-01-08T10:00:00.000Z AND observedAt < 2026-01-08T11:00:00.000Z',
      like: 'name LIKE HQ%',
    });
    expect(build("variables:\n  range: '[{{window.from | epoch-seconds}},{{window.to | epoch-seconds}})'\n")).toEqual({ range: '[1767866400,1767870000)' });
    expect(build("variables:\n  from: '{{window.from | date}}T00:00:00Z'\n", {}, { from: Date.UTC(2026, 0, 8), to: Date.UTC(2026, 0, 9) })).toEqual({ from: '2026-01-08T00:00:00Z' });
  });

  it('leaves out the field or list element of an unset setting, inside lists and objects too', () => {
    const text = [
      'variables:',
      "  nameLike: '{{settings.buildingsNameLike}}'",
      "  names: [first, '{{settings.buildingsNameLike}}', last]",
      "  filter: { name: '{{settings.buildingsNameLike}}', text: 'like {{settings.buildingsNameLike}}', kind: site }",
    ].join('\n');
    const { compiled } = compile(text);
    expect(compiled!.build({ settings: {} })).toEqual({ names: ['first', 'last'], filter: { kind: 'site' } });
    expect(compiled!.build({ settings: { buildingsNameLike: null } })).toEqual({ names: ['first', 'last'], filter: { kind: 'site' } });
    expect(compiled!.build({ settings: { buildingsNameLike: 'A%' } })).toEqual({ nameLike: 'A%', names: ['first', 'A%', 'last'], filter: { name: 'A%', text: 'like A%', kind: 'site' } });
    // The top-level variable each setting is read under (softDelete.completeWhenUnset names these).
    expect([...compiled!.settingsRead]).toEqual([['nameLike', 'buildingsNameLike'], ['names', 'buildingsNameLike'], ['filter', 'buildingsNameLike']]);
  });
});

describe('problems found when the file is loaded, each at its file:line:column', () => {
  it('a bound sent in two formats', () => {
    const text = ['variables:', "  from: '{{window.from}}'", '  filter:', "    since: '{{window.from | epoch-seconds}}'"].join('\n');
    const { compiled, errors } = compile(text);
    expect(compiled).toBeUndefined();
    expect(errors).toEqual([`${FILE}:4:12: {{window.from}} is sent in two formats (iso and epoch-seconds). Fix: send each bound in one format`]);
  });

  it('an unknown placeholder, deep in a list, with the ones this release knows', () => {
    const { errors } = compile(['variables:', '  filter:', "    any: [1, '{{window.start}}']"].join('\n'));
    expect(errors).toEqual([
      `${FILE}:3:14: {{window.start}} is not a placeholder this release knows. Fix: use one of {{window.from}}, {{window.to}}, {{settings.buildingsNameLike}}`,
    ]);
  });

  it('an unknown filter, and a format on a setting', () => {
    const { errors } = compile(['variables:', "  from: '{{window.from | unix}}'", "  name: '{{settings.buildingsNameLike | date}}'"].join('\n'));
    expect(errors).toEqual([
      `${FILE}:2:9: "unix" in {{window.from | unix}} is neither a time format nor string. Fix: use one of iso, iso-seconds, epoch-seconds, epoch-milliseconds, date, optionally followed by | string`,
      `${FILE}:3:9: {{settings.buildingsNameLike | date}}: a setting takes no format. Fix: write {{settings.buildingsNameLike}}`,
    ]);
  });

  it('a window placeholder in a stream without windows, an unclosed one, a name that is no GraphQL name', () => {
    const full = compile("variables:\n  filter: { from: '{{window.from}}' }\n", { windowed: false, settings: ['buildingsNameLike'] });
    expect(full.errors).toEqual([`${FILE}:2:19: {{window.from}} is only known to an incremental stream. Fix: remove it, or make the stream incremental`]);
    expect(compile("variables:\n  from: 'since {{window.from'\n").errors).toEqual([
      `${FILE}:2:9: "since {{window.from" has an unclosed or nested placeholder. Fix: write each placeholder as {{name}} or {{name | format}}`,
    ]);
    expect(compile('variables:\n  my-var: 1\n').errors).toEqual([`${FILE}:2:3: variable "my-var" is not a GraphQL name. Fix: use the name the document declares, without $`]);
    expect(compile('variables: [1]\n').errors[0]).toMatch(/^\/defs\/streams\.yaml:1:12: variables must be a map, got /);
  });
});
