import { fileURLToPath } from 'node:url';
import { relative } from 'node:path';
import { loadDefinitionsFile, type Definitions } from '../src/sync/definitions.ts';
import type { AnyStream } from '../src/sync/stream.ts';

const PACKAGE_ROOT = fileURLToPath(new URL('..', import.meta.url));
/** The built-in definitions file: the streams below and their documents, in the format a user's file uses. */
export const BUILTIN_DEFINITIONS_FILE = fileURLToPath(new URL('./streams.yaml', import.meta.url));

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
