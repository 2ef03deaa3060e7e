import type { Pool as UndiciPool } from 'undici';
import requestApi from 'undici/lib/api/index.js';
import Dispatcher from 'undici/lib/dispatcher/dispatcher.js';
import PoolClass from 'undici/lib/dispatcher/pool.js';

/*
 * undici's Pool with its request API, taken from the files undici's own index takes them from, as its index does
 * (`Object.assign(Dispatcher.prototype, api)`). The index also loads every other dispatcher, fetch, WebSocket, the
 * caches and the mocks: far more code than a cron `sync` needs for the one Pool it uses. undici has no "exports"
 * map, so these paths resolve in a clone and in the package alike; a release that moves them fails the build (the
 * bundler cannot resolve them) and the transport's tests, not a user's run.
 */
Object.assign(Dispatcher.prototype, requestApi);

export const Pool = PoolClass as unknown as typeof UndiciPool;
export type Pool = UndiciPool;
