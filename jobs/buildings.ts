/** The whole (optionally name-filtered) buildings listing: defined in jobs/streams.yaml (with jobs/buildings.graphql). */
export { buildings } from './index.ts';
