import { fileURLToPath } from 'node:url';
import { defineStream } from '../src/sync/stream.ts';

/** Every run reads the whole (optionally name-filtered) listing in one request and upserts it. */
export const buildings = defineStream({
  name: 'buildings',
  document: fileURLToPath(new URL('./buildings.graphql', import.meta.url)),
  sink: 'buildings',
  kind: 'full-refresh',
  paging: { style: 'single', path: ['buildings'] },
  variables: ({ settings }) => (settings.buildingsNameLike ? { nameLike: settings.buildingsNameLike } : {}),
  record: {
    id: { path: 'id', type: 'id' },
    name: { path: 'name', type: 'string' },
  },
  // A filtered listing says nothing about the buildings it leaves out.
  softDelete: { isComplete: (variables) => variables.nameLike === undefined || variables.nameLike === null },
});
