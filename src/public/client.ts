/**
 * `occupancy-sync/client`: the platform API client (token provider shared by concurrent callers, gzip GraphQL
 * transport, the retry policy of docs/api-client.md).
 */
import { createApiClient as createApiClientImpl } from '../api/client.ts';
import { loadDocument as loadDocumentImpl } from '../api/documents.ts';

export { HTTP_DEFAULTS, DEFAULT_REFRESH_MARGIN_MS } from '../api/client.ts';
export type { ApiClient, ApiClientOptions, ApiStats, RequestOptions } from '../api/client.ts';
export type { LoadedDocument } from '../api/documents.ts';
export { ApiTransportError, BaseUrlError, type FailureReason } from '../api/failure.ts';

/**
 * Creates the client for one API key. It keeps one bearer token, refreshed before it expires by a single request
 * shared by all callers; a 401 re-authenticates once. Requests retry on network errors, timeouts, 5xx and 429
 * (honouring `Retry-After`). Close it when done: it holds a keep-alive connection pool.
 *
 * @example
 * import { createApiClient, loadDocument } from 'occupancy-sync/client';
 *
 * const client = createApiClient({ baseUrl: 'https://api.example.com', apiKey: process.env.API_KEY!, apiSecret: process.env.API_SECRET! });
 * try {
 *   const doc = loadDocument('./buildings.graphql'); // a file with one GraphQL operation
 *   const data = await client.request<{ buildings: Array<{ id: string; name: string }> }>(doc, { nameLike: null });
 *   console.log(data.buildings.length, client.stats);
 * } finally {
 *   await client.close();
 * }
 */
export const createApiClient: typeof createApiClientImpl = createApiClientImpl;

/**
 * Reads and parses a `.graphql` file holding one operation; syntax errors throw a `ConfigError` naming
 * file:line:column.
 *
 * @example
 * import { loadDocument } from 'occupancy-sync/client';
 * const doc = loadDocument(new URL('./occupancy.graphql', import.meta.url).pathname);
 * console.log(doc.operationName, doc.operationType);
 */
export const loadDocument: typeof loadDocumentImpl = loadDocumentImpl;
