import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../clock.ts';
import { SignatureVerificationError } from '../errors.ts';

/**
 * Verification of the platform's webhook signature (external API, section 5.1), as a pure module with an injected
 * clock so users can verify deliveries in their own servers too.
 *
 *   X-Service-Signature: t=<epoch seconds>,s=<HEX_UPPERCASE>
 *   s = HMAC-SHA-256(key = UTF-8 bytes of the secret, message = UTF-8 bytes of "<t>." + raw decompressed body)
 *
 * The body is always the bytes as received (after gzip decompression): never re-serialised JSON, whose whitespace,
 * key order and number formatting would differ from what was signed.
 */

/** The header name, lower-cased as node:http presents incoming headers. */
export const SIGNATURE_HEADER = 'x-service-signature';
/** Recommended replay tolerance (API section 8): five minutes, applied in both directions. */
export const DEFAULT_SIGNATURE_TOLERANCE_MS = 300_000;

/** SHA-256 digests are 32 bytes, 64 hex characters. */
const HEX_LENGTH = 64;
/** Real headers are ~80 characters; anything far longer is refused before it is split. */
const MAX_HEADER_LENGTH = 1024;
/** Epoch seconds fit in 11 digits until the year 5138; more digits are not a timestamp. */
const T_PATTERN = /^\d{1,11}$/;
const S_PATTERN = /^[0-9A-Fa-f]+$/;

export interface ParsedSignature {
  /** Unix epoch seconds. */
  t: number;
  /** The hex digest as sent (either case). */
  s: string;
}

function malformed(detail: string, header: string): never {
  throw new SignatureVerificationError('malformed_header', `${SIGNATURE_HEADER} is malformed: ${detail}`, { header });
}

/**
 * Parses `t=<digits>,s=<64 hex>` strictly but tolerantly: the parts may come in either order and may have
 * whitespace around them and around `=`. Duplicated or unknown parts, empty parts, a non-digit `t` and an `s` that is
 * not 64 hex characters are refused with reason `malformed_header`; an absent or blank header with `missing_header`.
 */
export function parseSignatureHeader(header: string | string[] | undefined | null): ParsedSignature {
  // node:http hands a repeated header over as an array (or joined with ", "): two signatures is not a signature.
  if (Array.isArray(header)) {
    if (header.length === 0) header = undefined;
    else if (header.length > 1) malformed('the header appears more than once', header.join(', '));
    else header = header[0];
  }
  if (header === undefined || header === null || header.trim() === '') {
    throw new SignatureVerificationError('missing_header', `the delivery has no ${SIGNATURE_HEADER} header`);
  }
  if (header.length > MAX_HEADER_LENGTH) malformed(`longer than ${MAX_HEADER_LENGTH} characters`, header.slice(0, 64));
  let t: string | undefined;
  let s: string | undefined;
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) malformed('expected t=<epoch seconds>,s=<hex>; found a part without "="', header);
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't') {
      if (t !== undefined) malformed('t appears more than once', header);
      t = value;
    } else if (key === 's') {
      if (s !== undefined) malformed('s appears more than once', header);
      s = value;
    } else {
      malformed(`unknown part ${JSON.stringify(key.slice(0, 16))}; expected only t and s`, header);
    }
  }
  if (t === undefined) malformed('no t=<epoch seconds> part', header);
  if (s === undefined) malformed('no s=<hex> part', header);
  if (!T_PATTERN.test(t)) malformed('t must be Unix epoch seconds (digits only)', header);
  if (!S_PATTERN.test(s) || s.length !== HEX_LENGTH) {
    malformed(`s must be ${HEX_LENGTH} hexadecimal characters (an HMAC-SHA-256 digest)`, header);
  }
  return { t: Number(t), s };
}

function toBuffer(body: Buffer | Uint8Array | string): Buffer {
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  return Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
}

/** HMAC-SHA-256 over the UTF-8 bytes of `<t>.` followed by the raw body bytes, as UPPERCASE hex. */
export function computeSignature(secret: string, t: number, rawBody: Buffer | Uint8Array | string): string {
  return computeDigest(secret, t, rawBody).toString('hex').toUpperCase();
}

function computeDigest(secret: string, t: number, rawBody: Buffer | Uint8Array | string): Buffer {
  return createHmac('sha256', secret).update(`${t}.`).update(toBuffer(rawBody)).digest();
}

/**
 * Builds a valid `X-Service-Signature` value, like stripe's `generateTestHeaderString`: for tests and for anyone
 * simulating the platform. `t` is Unix epoch seconds.
 */
export function signatureHeader(secret: string, rawBody: Buffer | Uint8Array | string, t: number): string {
  return `t=${t},s=${computeSignature(secret, t, rawBody)}`;
}

/**
 * Constant-time comparison of the digest bytes. Comparing bytes, not hex text, makes the check case-insensitive
 * (the platform sends upper case) without re-encoding either side on every delivery.
 */
function digestsEqual(expected: Buffer, received: Buffer): boolean {
  // timingSafeEqual throws on different lengths; the parser already fixed the length, this keeps it total.
  return expected.length === received.length && timingSafeEqual(expected, received);
}

export interface VerifySignatureOptions {
  /** The `X-Service-Signature` header as received (node:http may give an array when it was repeated). */
  header: string | string[] | undefined | null;
  /** The raw request body after decompression, exactly as received. */
  rawBody: Buffer | Uint8Array | string;
  /** Accepted secrets, e.g. [current, previous] during a rotation. */
  secrets: readonly string[];
  /** Maximum distance between t and now, in either direction. Default 300 000 ms. */
  toleranceMs?: number;
  /** Current time: a Clock or epoch milliseconds. */
  now: Clock | number;
}

export interface VerifiedSignature {
  /** Unix epoch seconds from the header. */
  t: number;
  /** Index into `secrets` of the secret that matched (0 = current, 1 = previous during rotation). */
  secretIndex: number;
}

export interface SignatureVerifier {
  /** Feeds the next bytes of the raw (decompressed) body, in order. */
  update(chunk: Buffer | Uint8Array | string): void;
  /** After the last chunk: the verified signature, or SignatureVerificationError (see verifySignature). */
  verify(now: Clock | number): VerifiedSignature;
}

/**
 * Verification as the body streams in: the header is parsed (and refused when missing or malformed) before any of the
 * body is read, then each chunk goes through one HMAC per secret, so a receiver never has to keep an unauthenticated
 * body to check it. `verifySignature` is this with the whole body at once.
 *
 * @example
 * const verifier = createSignatureVerifier({ header: req.headers['x-service-signature'], secrets: [current, previous] });
 * for await (const chunk of inflatedBody) verifier.update(chunk);
 * const { secretIndex } = verifier.verify(Date.now());
 */
export function createSignatureVerifier(options: {
  header: string | string[] | undefined | null;
  secrets: readonly string[];
  toleranceMs?: number;
}): SignatureVerifier {
  const secrets = options.secrets.filter((secret) => secret.length > 0);
  if (secrets.length === 0) {
    throw new SignatureVerificationError('no_secret', 'no signature secret is configured to verify the delivery with');
  }
  const { t, s } = parseSignatureHeader(options.header);
  const hmacs = secrets.map((secret) => createHmac('sha256', secret).update(`${t}.`));
  return {
    update(chunk) {
      const bytes = toBuffer(chunk);
      for (const hmac of hmacs) hmac.update(bytes);
    },
    verify(now) {
      // The parser accepted exactly 64 hex digits, so this decodes all of them.
      const received = Buffer.from(s, 'hex');
      let secretIndex = -1;
      // Every secret is compared even after a match, so the time taken does not tell which secret is current.
      hmacs.forEach((hmac, index) => {
        if (digestsEqual(hmac.digest(), received) && secretIndex < 0) secretIndex = index;
      });
      if (secretIndex < 0) {
        throw new SignatureVerificationError('no_match', 'the signature does not match the body with any configured secret', {
          header: typeof options.header === 'string' ? options.header : undefined,
        });
      }
      const toleranceMs = options.toleranceMs ?? DEFAULT_SIGNATURE_TOLERANCE_MS;
      const nowMs = typeof now === 'number' ? now : now.now();
      const ageMs = nowMs - t * 1000;
      if (ageMs > toleranceMs) {
        throw new SignatureVerificationError(
          'stale_timestamp',
          `the signature timestamp is ${Math.round(ageMs / 1000)} s old; at most ${Math.round(toleranceMs / 1000)} s is accepted`,
        );
      }
      if (-ageMs > toleranceMs) {
        throw new SignatureVerificationError(
          'future_timestamp',
          `the signature timestamp is ${Math.round(-ageMs / 1000)} s in the future; at most ${Math.round(toleranceMs / 1000)} s is accepted (check the clock)`,
        );
      }
      return { t, secretIndex };
    },
  };
}

/**
 * Verifies a delivery's signature against one or more secrets. Throws `SignatureVerificationError` whose `reason`
 * is `no_secret`, `missing_header`, `malformed_header`, `no_match`, `stale_timestamp` or `future_timestamp`.
 *
 * The digest is checked before the timestamp (as stripe does), so `stale_timestamp` and `future_timestamp` only ever
 * describe genuine deliveries: a replay or a clock out of sync, not a forgery.
 *
 * @example
 * const { secretIndex } = verifySignature({
 *   header: req.headers['x-service-signature'], rawBody, secrets: [current, previous], now: Date.now(),
 * });
 */
export function verifySignature(options: VerifySignatureOptions): VerifiedSignature {
  const verifier = createSignatureVerifier(options);
  verifier.update(options.rawBody);
  return verifier.verify(options.now);
}
