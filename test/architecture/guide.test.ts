import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { SINK_NAMES, sinkColumns } from '../../src/store/columns.ts';
import { PAGING_STYLES } from '../../src/sync/paging/index.ts';
import { ROOT } from '../support/process.ts';

/**
 * docs/architecture.md's worked examples (adding a sink, a paging style, a command) checked against the code: the
 * files they name exist, and what the code already has of each kind (its sinks' tables and record types, its styles,
 * its commands) is imported by no other source file than those the example lists. A sink, style or command that
 * needed a further file would make the example untrue, and this fails naming the file.
 */

const GUIDE = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
const rel = (file: string) => relative(ROOT, file).split(sep).join('/');

/** A worked example's text: from its heading to the next heading of its level or above. */
function example(title: string): string {
  const start = GUIDE.indexOf(`### Worked example: ${title}`);
  expect(start, `docs/architecture.md has "### Worked example: ${title}"`).toBeGreaterThan(0);
  const end = GUIDE.slice(start + 4).search(/\n##+ /);
  return GUIDE.slice(start, end < 0 ? undefined : start + 4 + end);
}

/** The repository paths an example names in backticks (`src/...`, `db/...`, `jobs/...`), with `{a,b}` expanded. */
function pathsIn(text: string): string[] {
  const found = new Set<string>();
  for (const [, path] of text.matchAll(/`((?:src|db|jobs|test)\/[^`\s]+)`/g)) {
    const braces = /\{([^}]+)\}/.exec(path!);
    for (const p of braces ? braces[1]!.split(',').map((alt) => path!.replace(braces[0], alt)) : [path!]) found.add(p);
  }
  return [...found];
}

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
    .map((e) => join(e.parentPath, e.name));
}

const SOURCE_FILES = ['src', 'jobs', 'bin', 'db/schema'].flatMap(sources);

/** Per source file, the names it imports (or re-exports) from each file, by the imported file's path; `*` for import(). */
const IMPORTS = new Map(
  SOURCE_FILES.map((file) => {
    const from = new Map<string, Set<string>>();
    const add = (spec: string, names: readonly string[]) => {
      if (!spec.startsWith('.')) return;
      const target = rel(resolve(dirname(file), spec));
      from.set(target, new Set([...(from.get(target) ?? []), ...names]));
    };
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
        const names: string[] = [];
        const bindings = ts.isImportDeclaration(node) ? node.importClause?.namedBindings : node.exportClause;
        if (bindings && (ts.isNamedImports(bindings) || ts.isNamedExports(bindings))) {
          for (const e of bindings.elements) names.push((e.propertyName ?? e.name).text);
        } else if (ts.isExportDeclaration(node)) {
          // `export * from`: passes everything on, names nothing of its own.
        } else names.push('*');
        add(node.moduleSpecifier.text, names);
      } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteral(node.arguments[0])) {
        // `const { a, b } = await import('./x.ts')` uses a and b; any other dynamic import, the whole file.
        const declaration = ts.isAwaitExpression(node.parent) ? node.parent.parent : undefined;
        const pattern = declaration && ts.isVariableDeclaration(declaration) && ts.isObjectBindingPattern(declaration.name) ? declaration.name : undefined;
        add(node.arguments[0].text, pattern ? pattern.elements.map((e) => (e.propertyName ?? e.name).getText(source)) : ['*']);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
    return [rel(file), from] as const;
  }),
);

/** Source files that import (or re-export) `name` from `file`, or import `file` whole. */
const importersOf = (file: string, name: string) =>
  [...IMPORTS]
    .filter(([, from]) => from.get(file)?.has(name) || from.get(file)?.has('*'))
    .map(([importer]) => importer)
    .sort();

const outside = (files: readonly string[], allowed: readonly string[]) => files.filter((f) => !allowed.includes(f));

/**
 * Where an existing sink is used beyond what adding one touches, and why: the aggregates follow a floor space moved
 * to another building (a use of the floor spaces' rows, not part of adding a sink).
 */
const SINK_USES: Readonly<Record<string, readonly string[]>> = {
  floorSpaces: ['src/store/store.ts', 'src/store/aggregate-store.ts'],
};

describe("docs/architecture.md's worked examples", () => {
  it('a new sink: every file the example names exists (its own new files aside)', () => {
    const paths = pathsIn(example('a stream with a new sink'));
    for (const path of ['db/schema/pg.ts', 'db/schema/sqlite.ts', 'src/store/columns.ts', 'src/store/types.ts', 'src/store/sinks.ts', 'src/public/store.ts', 'jobs/streams.yaml', 'db/views/pg.sql', 'db/views/sqlite.sql']) {
      expect(paths, path).toContain(path);
    }
    const made = ['jobs/desks.graphql', 'db/migrations/sqlite/NNNN_desks.sql', 'db/migrations/pg/NNNN_desks.sql'];
    expect(paths.filter((p) => !made.includes(p) && !existsSync(join(ROOT, p)))).toEqual([]);
    expect(GUIDE).toMatch(/npm run db:generate:sqlite -- --name desks/);
    expect(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts).toHaveProperty('db:generate:sqlite');
    // A view is a repeatable script, not a migration.
    expect(example('a stream with a new sink')).not.toMatch(/view[^.]*(new|further) migration/i);
  });

  it("a new sink: each dimension sink there is is imported by the example's source files and no others", () => {
    const listed = pathsIn(example('a stream with a new sink'));
    const dimensions = SINK_NAMES.filter((s) => s !== 'occupancy');
    expect(dimensions.length).toBeGreaterThanOrEqual(3);
    const types = readFileSync(join(ROOT, 'src/store/types.ts'), 'utf8');
    for (const sink of dimensions) {
      const table = sinkColumns(sink).relation;
      // Its Drizzle table (exported by db/schema/pg.ts under the sink's name) and its record type (SinkRecords').
      const tableUsers = importersOf('db/schema/pg.ts', sink);
      expect(tableUsers, `the importers of the table of ${sink}`).toEqual(['src/store/columns.ts', 'src/store/sinks.ts']);
      const record = new RegExp(`\\n\\s*${sink}: (\\w+);`).exec(types)?.[1];
      expect(record, `SinkRecords names the record type of ${sink}`).toMatch(/Record$/);
      const recordUsers = importersOf('src/store/types.ts', record!);
      expect(recordUsers, `src/public/store.ts exports ${record}`).toContain('src/public/store.ts');
      expect(outside(recordUsers, [...listed, ...(SINK_USES[sink] ?? [])]), `files importing ${record} beyond the example's`).toEqual([]);
      expect(readFileSync(join(ROOT, 'db/schema/sqlite.ts'), 'utf8'), `db/schema/sqlite.ts has ${table}`).toMatch(new RegExp(`export const ${sink} = sqliteTable\\(\\s*'${table}'`));
      expect(readFileSync(join(ROOT, 'docs/reporting.md'), 'utf8'), `docs/reporting.md documents ${table}`).toContain(table);
    }
  });

  it("a paging style: each style there is is imported by the registry alone", () => {
    const text = example('a paging style');
    expect(text).toContain('`MODULES`');
    expect(text).toContain('`src/sync/paging/index.ts`');
    const registry = readFileSync(join(ROOT, 'src/sync/paging/index.ts'), 'utf8');
    const modules = /const MODULES = \[([^\]]+)\]/.exec(registry)![1]!.split(',').map((m) => m.trim());
    expect(modules).toHaveLength(PAGING_STYLES.length);
    for (const module of modules) {
      const own = SOURCE_FILES.map(rel).find((f) => f.startsWith('src/sync/paging/') && new RegExp(`export const ${module} = defineStyle\\(`).test(readFileSync(join(ROOT, f), 'utf8')));
      expect(own, `the module defining ${module}`).toBeDefined();
      expect(importersOf(own!, module!), `files importing the style ${module}`).toEqual(['src/sync/paging/index.ts']);
    }
  });

  it("a command: each command there is is imported by the commands list alone", () => {
    const text = example('a command');
    expect(text).toContain('`src/cli/commands/index.ts`');
    const dir = join(ROOT, 'src/cli/commands');
    const files = readdirSync(dir).filter((f) => f.endsWith('.ts') && f !== 'index.ts');
    expect(files.length).toBeGreaterThan(10);
    const index = readFileSync(join(dir, 'index.ts'), 'utf8');
    for (const file of files) {
      const name = /export const (\w+Command): CommandModule/.exec(readFileSync(join(dir, file), 'utf8'))?.[1];
      expect(name, `src/cli/commands/${file} exports one CommandModule`).toBeDefined();
      expect(index, `its line in commands`).toMatch(new RegExp(`\\n\\s+${name},`));
      expect(importersOf(`src/cli/commands/${file}`, name!), `files importing ${name}`).toEqual(['src/cli/commands/index.ts']);
    }
  });

  it('the checks see what they guard', () => {
    expect(pathsIn('`db/migrations/{sqlite,pg}/x.sql` and `src/a.ts`')).toEqual(['db/migrations/sqlite/x.sql', 'db/migrations/pg/x.sql', 'src/a.ts']);
    expect(importersOf('src/cli/commands/state.ts', 'stateCommand')).toEqual(['src/cli/commands/index.ts']);
    // A dynamic import counts as using the whole file.
    expect(importersOf('src/app/database.ts', 'openForReading')).toContain('src/cli/commands/status.ts');
    expect(importersOf('src/cli/commands/record.ts', 'replaySandbox')).toEqual(['src/cli/commands/sandbox.ts']);
    expect(importersOf('src/sync/paging/offset.ts', 'offset')).toEqual(['src/sync/paging/index.ts']);
  });
});
