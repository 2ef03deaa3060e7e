// Public surface of the API client: token provider, GraphQL transport, job documents and the `check` steps.
export { createApiClient, HTTP_DEFAULTS, DEFAULT_REFRESH_MARGIN_MS } from './client.ts';
export type { ApiClient, ApiClientOptions, ApiStats, RequestOptions } from './client.ts';
export { loadDocument, parseDocumentSource, loadJobDocuments, SCHEMA_FILE_NAME } from './documents.ts';
export type { LoadedDocument } from './documents.ts';
export { validateDocuments, formatMismatch } from './document-schema.ts';
export type { DocumentMismatch } from './document-schema.ts';
export { fetchLiveSchema, loadSchemaFile, describeName, IntrospectionRefusedError, type LiveSchema } from './schema.ts';
export { checkCredentials, formatFinding, type CredentialsCheck, type Finding, type FindingKind } from './diagnose.ts';
export { decodeJwtClaims, jwtCustomer, jwtScopes } from './jwt.ts';
export { ApiTransportError, BaseUrlError, type FailureReason } from './failure.ts';
