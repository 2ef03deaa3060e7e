/** Observations by their `created` time: defined in jobs/streams.yaml (with jobs/occupancy.graphql). */
export { occupancy } from './index.ts';
