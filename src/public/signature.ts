/**
 * `occupancy-sync/signature`: verify the platform's webhook signatures in your own receiver. Imports nothing but
 * node:crypto: no logger, configuration, database or HTTP client comes with it.
 */
import {
  computeSignature as computeSignatureImpl,
  parseSignatureHeader as parseSignatureHeaderImpl,
  signatureHeader as signatureHeaderImpl,
  verifySignature as verifySignatureImpl,
} from '../webhooks/signature.ts';

export { SIGNATURE_HEADER, DEFAULT_SIGNATURE_TOLERANCE_MS } from '../webhooks/signature.ts';
export type { ParsedSignature, VerifySignatureOptions, VerifiedSignature } from '../webhooks/signature.ts';
export { SignatureVerificationError, type SignatureFailureReason } from '../errors.ts';

/**
 * Verifies a delivery's `X-Service-Signature` against one or more secrets (current and previous during a rotation)
 * over the raw, decompressed body bytes, with a replay window (default 300 s either way). Returns which secret matched;
 * throws `SignatureVerificationError` whose `reason` is `no_secret`, `missing_header`, `malformed_header`, `no_match`,
 * `stale_timestamp` or `future_timestamp`.
 *
 * @example
 * import { createServer } from 'node:http';
 * import { verifySignature, SIGNATURE_HEADER, SignatureVerificationError } from 'occupancy-sync/signature';
 *
 * createServer(async (req, res) => {
 *   const chunks: Buffer[] = [];
 *   for await (const chunk of req) chunks.push(chunk as Buffer);
 *   const rawBody = Buffer.concat(chunks); // verify the bytes as received, never re-serialised JSON
 *   try {
 *     verifySignature({ header: req.headers[SIGNATURE_HEADER], rawBody, secrets: [process.env.WEBHOOK_SECRET!], now: Date.now() });
 *   } catch (error) {
 *     if (error instanceof SignatureVerificationError) return void res.writeHead(401).end(error.reason);
 *     throw error;
 *   }
 *   const delivery = JSON.parse(rawBody.toString('utf8'));
 *   res.writeHead(200).end();
 * }).listen(8080);
 */
export const verifySignature: typeof verifySignatureImpl = verifySignatureImpl;

/**
 * Parses `t=<epoch seconds>,s=<64 hex>` strictly (either order, whitespace tolerated). Throws
 * `SignatureVerificationError` with reason `missing_header` or `malformed_header`.
 *
 * @example
 * import { parseSignatureHeader } from 'occupancy-sync/signature';
 * const { t, s } = parseSignatureHeader('t=1767225600,s=9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08');
 * // t === 1767225600: when the platform signed the delivery, in Unix seconds
 */
export const parseSignatureHeader: typeof parseSignatureHeaderImpl = parseSignatureHeaderImpl;

/**
 * The signature itself: HMAC-SHA-256 over `<t>.` followed by the raw body bytes, as upper-case hex.
 *
 * @example
 * import { computeSignature } from 'occupancy-sync/signature';
 * const hex = computeSignature(secret, 1767225600, rawBody);
 */
export const computeSignature: typeof computeSignatureImpl = computeSignatureImpl;

/**
 * Builds a valid `X-Service-Signature` value for `rawBody` at `t` (Unix seconds): to test your receiver, or to
 * simulate the platform.
 *
 * @example
 * import { signatureHeader, SIGNATURE_HEADER } from 'occupancy-sync/signature';
 * const body = JSON.stringify({ Id: 'test-1', Type: 'Occupancy' });
 * await fetch('http://127.0.0.1:8080/webhook', {
 *   method: 'POST',
 *   headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: signatureHeader(secret, body, Math.floor(Date.now() / 1000)) },
 *   body,
 * });
 */
export const signatureHeader: typeof signatureHeaderImpl = signatureHeaderImpl;
