import { readFileSync } from 'node:fs';
import { API_VARIANT_INFO, type ApiVariant } from '../api-variants.ts';
import type { CustomerData, DataModel, Observation } from '../data.ts';
import { cappedRoot } from './capped.ts';
import { changeRoot, statusChanges } from './change.ts';
import { edgesRoot } from './edges.ts';
import { pagesRoot } from './pages.ts';
import { perSpaceRoot } from './per-space.ts';
import { presenceRoot } from './presence.ts';
import { tokenRoot } from './token.ts';
import { v1Root } from './v1.ts';
import { v2Root } from './v2.ts';

/** Each variant's root resolvers (graphql-js calls a root field's function with (args, context)). */
const ROOTS: Record<ApiVariant, object> = {
  v1: v1Root,
  v2: v2Root,
  edges: edgesRoot,
  token: tokenRoot,
  pages: pagesRoot,
  capped: cappedRoot,
  presence: presenceRoot,
  change: changeRoot,
  'per-space': perSpaceRoot,
};

export function variantRootValue(variant: ApiVariant): object {
  return ROOTS[variant];
}

/** The SDL a variant serves (v1: the committed, assumed jobs/schema.graphql). */
export function variantSchemaSdl(variant: ApiVariant): string {
  return readFileSync(new URL(`../../../${API_VARIANT_INFO[variant].schemaFile}`, import.meta.url), 'utf8');
}

/**
 * The readings a variant holds, of the observations of every tick (the ground truth of `sandbox.truth`): all of them,
 * or for change-only sensors the status changes alone (src/sandbox/variants/change.ts).
 */
export function variantReadings(variant: ApiVariant, model: DataModel, customer: CustomerData, rows: Iterable<Observation>): Iterable<Observation> {
  return API_VARIANT_INFO[variant].sampling === 'change' ? statusChanges(model, customer, rows) : rows;
}
