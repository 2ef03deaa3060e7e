/**
 * `occupancy-sync/sync`: run a sync from your own program, as `occupancy-sync sync` does: every stream (or some)
 * for every configured customer, each page committed with its checkpoint.
 */
import { openForWriting } from '../app/database.ts';
import { engineSettings as engineSettingsImpl } from '../app/engine-settings.ts';
import { runOnce as runOnceImpl } from '../app/run-once.ts';
import { allStreams, loadStreams as loadStreamsImpl, selectStreams as selectStreamsImpl } from '../app/streams.ts';
import { parseDefinitions as parseDefinitionsImpl } from '../sync/definitions.ts';
import { parseDocumentSource } from '../api/documents.ts';
import { runSync as runSyncImpl } from '../sync/engine.ts';

export type { RunOnceOptions } from '../app/run-once.ts';
export type { SyncOptions, SyncReport, SyncTarget, RunRequest, StreamOutcome, ProgressEvent } from '../sync/engine.ts';
export type { AnyStream, StreamDefinition } from '../sync/stream.ts';
export type { EngineSettings } from '../sync/settings.ts';
export type { StreamSetup } from '../app/streams.ts';
export type { Definitions, DefinitionsIo, WebhookOperation } from '../sync/definitions.ts';

/**
 * The streams occupancy-sync ships (`buildings`, `occupancy`), in the order a sync runs them.
 *
 * @example
 * import { streams } from 'occupancy-sync/sync';
 * console.log(streams.map((s) => `${s.name} (${s.kind})`));
 */
export const streams: typeof allStreams = allStreams;

/**
 * The streams in force for `config`, as every command reads them: the built-in ones with the user's definitions file
 * (`DEFINITIONS_FILE`, or `./occupancy-sync.streams.yaml`) over them, and the webhook documents it replaces. A file
 * that breaks the format throws one `ConfigError` naming file, line and column of each problem
 * (docs/api-assumptions.md, "Adapting to the real API").
 *
 * @example
 * import { resolveConfig } from 'occupancy-sync';
 * import { loadStreams, runOnce } from 'occupancy-sync/sync';
 * const config = resolveConfig(process.env);
 * const { streams } = loadStreams(config);
 * const report = await runOnce({ config, store, logger, customers: config.customers, streams });
 */
export const loadStreams: typeof loadStreamsImpl = (config, options = {}) => loadStreamsImpl(config, { parseDocument: parseDocumentSource, ...options });

/**
 * Validates a definitions file's text (version 1) without running anything: the streams and webhook documents it
 * defines (their GraphQL checked too), or a `ConfigError` with one `file:line:column: problem. Fix: ...` line per
 * problem.
 *
 * @example
 * import { readFileSync } from 'node:fs';
 * import { parseDefinitions } from 'occupancy-sync/sync';
 * const file = './occupancy-sync.streams.yaml';
 * parseDefinitions(readFileSync(file, 'utf8'), file, { readText: (path) => readFileSync(path, 'utf8') });
 */
export const parseDefinitions: typeof parseDefinitionsImpl = (text, file, io) => parseDefinitionsImpl(text, file, { parseDocument: parseDocumentSource, ...io });

/**
 * The streams named like `--stream` does (all when `name` is undefined); a `ConfigError` lists the valid names.
 *
 * @example
 * import { selectStreams } from 'occupancy-sync/sync';
 * const onlyOccupancy = selectStreams('occupancy');
 */
export const selectStreams: typeof selectStreamsImpl = selectStreamsImpl;

/**
 * Opens `config.database` and applies pending migrations (what every CLI command does first).
 *
 * @example
 * import { resolveConfig } from 'occupancy-sync';
 * import { openDatabase } from 'occupancy-sync/sync';
 * const store = await openDatabase(resolveConfig(process.env).database);
 */
export const openDatabase: (database: Parameters<typeof openForWriting>[0]) => ReturnType<typeof openForWriting> = (database) =>
  openForWriting(database);

/**
 * One run, like `occupancy-sync sync`: builds an API client per customer, runs the streams, closes the clients.
 * Customers are independent (one failing does not stop the others); read each outcome in the report. Aborting
 * `signal` lets the current page commit and records the run as interrupted.
 *
 * @example
 * import { createLogger, resolveConfig } from 'occupancy-sync';
 * import { openDatabase, runOnce, streams } from 'occupancy-sync/sync';
 *
 * const config = resolveConfig(process.env); // API_BASE_URL, API_KEY, API_SECRET, CUSTOMER_ID, DATABASE_URL, ...
 * const store = await openDatabase(config.database);
 * try {
 *   const report = await runOnce({ config, store, logger: createLogger(), customers: config.customers, streams });
 *   for (const o of report.outcomes) console.log(o.customerId, o.stream, o.status, o.records);
 * } finally {
 *   await store.close();
 * }
 */
export const runOnce: typeof runOnceImpl = runOnceImpl;

/**
 * The engine itself, for callers that bring their own clients (`targets`) and document loader; `runOnce` wires it
 * the way the CLI does.
 *
 * @example
 * import { engineSettings, runSync, streams } from 'occupancy-sync/sync';
 * import { createApiClient, loadDocument } from 'occupancy-sync/client';
 * import { systemClock } from 'occupancy-sync';
 *
 * const client = createApiClient({ baseUrl, apiKey, apiSecret });
 * const report = await runSync({
 *   store, clock: systemClock, logger, settings: engineSettings(config), streams, loadDocument,
 *   targets: [{ customerId: config.customers[0]!.id, client }],
 * });
 * await client.close();
 */
export const runSync: typeof runSyncImpl = runSyncImpl;

/**
 * The engine's settings (`runSync`'s `settings`) from a resolved configuration, as the CLI makes them: the window,
 * page and contract settings, and the values a definitions file's `{{settings.NAME}}` placeholders read
 * (`buildingsNameLike`, from BUILDINGS_NAME_LIKE).
 *
 * @example
 * import { resolveConfig } from 'occupancy-sync';
 * import { engineSettings } from 'occupancy-sync/sync';
 * const settings = engineSettings(resolveConfig(process.env));
 */
export const engineSettings: typeof engineSettingsImpl = engineSettingsImpl;
