// The main entry: the public API for embedding occupancy-sync. Each part also has its own subpath, which loads only
// what that part needs (`occupancy-sync/signature` loads no logger, configuration or database driver). Test helpers
// live in `occupancy-sync/testing`.
export * from './public/config.ts';
export * from './errors.ts';
export { systemClock, type Clock } from './clock.ts';
export * from './public/signature.ts';
export * from './public/store.ts';
export * from './public/client.ts';
export * from './public/webhooks.ts';
export * from './public/sync.ts';
