import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { relative } from 'node:path';
import { loadDefinitionsFile, type Definitions } from '../src/sync/definitions.ts';
import type { AnyStream } from '../src/sync/stream.ts';

const PACKAGE_ROOT = fileURLToPath(new URL('..', import.meta.url));
const SOURCE_FILE = fileURLToPath(new URL('./streams.yaml', import.meta.url));
/** What the build writes next to the compiled module (scripts/build.ts): the same definitions as JSON, which is YAML. */
const BUILT_FILE = fileURLToPath(new URL('./streams.json', import.meta.url));
/**
 * The built-in definitions file: the streams below and their documents, in the format a user's file uses. The
 * installed package reads the JSON the build made of it, without loading the YAML parser (start-up time).
 */
export const BUILTIN_DEFINITIONS_FILE = existsSync(BUILT_FILE) ? BUILT_FILE : SOURCE_FILE;

/** The built-in definitions (jobs/streams.yaml), read once; paths in messages are relative to the package. */
export const builtinDefinitions: Definitions = loadDefinitionsFile(BUILTIN_DEFINITIONS_FILE, {
  label: (path) => relative(PACKAGE_ROOT, path).split('\\').join('/'),
});

/**
 * The stream registry, in run order: buildings first, so observations of a new building land after the building.
 * Add a stream to jobs/streams.yaml (and its document next to it); the engine needs no change.
 */
export const streams: ReadonlyArray<AnyStream> = builtinDefinitions.streams;

function builtin(name: string): AnyStream {
  const stream = streams.find((s) => s.name === name);
  if (!stream) throw new Error(`jobs/streams.yaml defines no stream ${name}`);
  return stream;
}

export const buildings = builtin('buildings') as Extract<AnyStream, { sink: 'buildings' }>;
export const occupancy = builtin('occupancy') as Extract<AnyStream, { sink: 'occupancy' }>;
