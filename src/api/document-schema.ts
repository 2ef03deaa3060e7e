import {
  Kind,
  getNamedType,
  isInputObjectType,
  isInputType,
  isInterfaceType,
  isListType,
  isNonNullType,
  isObjectType,
  print,
  typeFromAST,
  validate,
  type FragmentDefinitionNode,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLOutputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type OperationTypeNode,
  type SelectionSetNode,
} from 'graphql';
import type { LoadedDocument } from './documents.ts';
import type { OfferedSchema } from './offered.ts';

/*
 * Job documents against a schema (the committed SDL or the live one): `check`, `schema` and the definitions' fit. Kept
 * apart from documents.ts so that a command that only sends documents never loads graphql's type system.
 */

/** A document that does not match a schema, located in its file. */
export interface DocumentMismatch {
  file: string;
  line: number;
  column: number;
  message: string;
}

/** Validates documents against a schema; each GraphQL validation error becomes one mismatch at its first location. */
export function validateDocuments(schema: GraphQLSchema, documents: readonly LoadedDocument[]): DocumentMismatch[] {
  const mismatches: DocumentMismatch[] = [];
  for (const doc of documents) {
    for (const error of validate(schema, doc.document)) {
      const locations = error.locations?.length ? error.locations : [{ line: 1, column: 1 }];
      const at = locations[0]!;
      mismatches.push({ file: doc.file, line: at.line, column: at.column, message: error.message });
    }
  }
  return mismatches;
}

export function formatMismatch(m: DocumentMismatch): string {
  return `${m.file}:${m.line}:${m.column}: ${m.message}`;
}

/** A field of a document's answer, as the schema types it. */
export interface AnswerField {
  /** The field's type in the schema (lists and non-null included). */
  type: GraphQLOutputType;
  /** The type that has the field, and the field's name there (an alias resolved). */
  parent: string;
  name: string;
  line: number;
  column: number;
}

/**
 * The schema type of every field a document's operation selects, by its path in the answer (response keys joined by
 * dots, lists not marked: `occupancyEvents.edges.node.status`), through aliases, inline fragments and fragment
 * spreads. A field the schema lacks is left out (validateDocuments names it); a path selected on several types (a
 * union's fragments) keeps the first.
 */
export function answerFields(schema: GraphQLSchema, doc: LoadedDocument): Map<string, AnswerField> {
  const out = new Map<string, AnswerField>();
  const fragments = new Map(
    doc.document.definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION).map((d) => [d.name.value, d]),
  );
  const operation = doc.document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  const root = operation && schema.getRootType(operation.operation as OperationTypeNode);
  const walk = (set: SelectionSetNode, parent: GraphQLNamedType, prefix: string, spreads: ReadonlySet<string>): void => {
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) {
        if (!isObjectType(parent) && !isInterfaceType(parent)) continue;
        const field = parent.getFields()[selection.name.value];
        if (!field) continue;
        const key = `${prefix}${(selection.alias ?? selection.name).value}`;
        const at = selection.loc?.startToken;
        if (!out.has(key)) out.set(key, { type: field.type, parent: parent.name, name: field.name, line: at?.line ?? 1, column: at?.column ?? 1 });
        if (selection.selectionSet) walk(selection.selectionSet, getNamedType(field.type), `${key}.`, spreads);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        const type = selection.typeCondition ? schema.getType(selection.typeCondition.name.value) : parent;
        if (type) walk(selection.selectionSet, type, prefix, spreads);
      } else {
        const name = selection.name.value;
        const fragment = fragments.get(name);
        const type = fragment && schema.getType(fragment.typeCondition.name.value);
        if (fragment && type && !spreads.has(name)) walk(fragment.selectionSet, type, prefix, new Set([...spreads, name]));
      }
    }
  };
  if (operation && root) walk(operation.selectionSet, root, '', new Set());
  return out;
}

/** A variable an operation declares, with its type in the schema (undefined when the schema has no such type). */
export interface DeclaredVariable {
  name: string;
  type: GraphQLInputType | undefined;
  /** The type as the document writes it (`Int!`). */
  written: string;
  line: number;
  column: number;
}

export function declaredVariables(schema: GraphQLSchema, doc: LoadedDocument): Map<string, DeclaredVariable> {
  const operation = doc.document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  const out = new Map<string, DeclaredVariable>();
  for (const v of operation?.variableDefinitions ?? []) {
    const type = typeFromAST(schema, v.type);
    const at = v.loc?.startToken;
    out.set(v.variable.name.value, {
      name: v.variable.name.value,
      type: type && isInputType(type) ? type : undefined,
      written: print(v.type),
      line: at?.line ?? 1,
      column: at?.column ?? 1,
    });
  }
  return out;
}

/** The input type at `path` inside a variable's type (input object fields, list elements), or undefined. */
export function inputTypeAt(type: GraphQLInputType, path: ReadonlyArray<string | number>): GraphQLInputType | undefined {
  let current: GraphQLInputType = type;
  for (const step of path) {
    const inner: GraphQLInputType = isNonNullType(current) ? current.ofType : current;
    if (typeof step === 'number') {
      if (!isListType(inner)) return undefined;
      current = inner.ofType;
    } else {
      if (!isInputObjectType(inner)) return undefined;
      const field = inner.getFields()[step];
      if (!field) return undefined;
      current = field.type;
    }
  }
  return current;
}

/** What a schema offers, as src/api/offered.ts reads it from a small introspection: each object type's fields. */
export function offeredOfSchema(schema: GraphQLSchema): OfferedSchema {
  const types = new Map<string, Map<string, string>>();
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) && !isInterfaceType(type)) continue;
    types.set(type.name, new Map(Object.values(type.getFields()).map((f) => [f.name, getNamedType(f.type).name])));
  }
  return { query: schema.getQueryType()?.name ?? 'Query', types };
}
