import type { AnyStream } from '../src/sync/stream.ts';
import { buildings } from './buildings.ts';
import { occupancy } from './occupancy.ts';

/**
 * The stream registry, in run order: buildings first, so observations of a new building land after the building.
 * Add a stream here (and its document and definition next to it); the engine needs no change.
 */
export const streams: ReadonlyArray<AnyStream> = [buildings, occupancy];

export { buildings, occupancy };
