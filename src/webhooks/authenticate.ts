import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { CustomerConfig } from '../config.ts';
import { SignatureVerificationError } from '../errors.ts';
import { createSignatureVerifier, SIGNATURE_HEADER, type SignatureVerifier } from './signature.ts';
import { Refusal, type RefusalReason } from './refusal.ts';

/**
 * Which configured customer sent this delivery? In two steps, around the body:
 *
 * 1. `prepare`, from the headers alone, before a byte of the body is read: a customer is a candidate when all its
 *    custom headers are present and equal (compared in constant time). A candidate with secrets needs a well-formed
 *    signature header; a request that no candidate could accept is refused (401) here, without reading its body.
 * 2. `finish`, after the body streamed through one HMAC per candidate secret: the customers whose signature verified.
 *
 * Closed by default: a customer with neither secrets nor custom headers is never a candidate unless the operator set
 * WEBHOOK_ACCEPT_UNSIGNED. The body's CustomerId (known only after parsing) must then be one of the authenticated
 * customers (`customerOf`).
 */

interface PreparedCustomer {
  id: string;
  secrets: string[];
  /** Until when the previous secret (index 1) is still accepted, epoch ms; undefined: for as long as it is set. */
  previousUntil: number | undefined;
  /** Header name (lower case, as node:http gives them) -> SHA-256 of the expected value. */
  headers: Array<[string, Buffer]>;
}

export interface Authentication {
  /** Ids of the customers that authenticated. */
  customerIds: string[];
  /** Which secret verified, per customer id (absent when the customer is matched by headers only). */
  secretIndex: Map<string, number>;
}

/** What `prepare` found in the headers; `update` takes the decompressed body as it streams. */
export interface PreparedRequest {
  update(chunk: Buffer): void;
  /** Customers matched without a signature (custom headers only, or unsigned deliveries accepted). */
  readonly matched: readonly string[];
  readonly verifiers: ReadonlyArray<{ customerId: string; verifier: SignatureVerifier }>;
}

const sha256 = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/** Hashing both sides first makes the comparison constant-time whatever the lengths of the two values. */
function headerMatches(received: string | string[] | undefined, expectedHash: Buffer): boolean {
  if (typeof received !== 'string') return false;
  return timingSafeEqual(sha256(received), expectedHash);
}

const SIGNATURE_REASON: Record<SignatureVerificationError['reason'], RefusalReason> = {
  missing_header: 'signature_missing',
  malformed_header: 'signature_malformed',
  no_match: 'signature_mismatch',
  stale_timestamp: 'signature_stale',
  future_timestamp: 'signature_future',
  no_secret: 'signature_missing',
};
/** When several customers fail differently, report the most specific failure. */
const PRECEDENCE: RefusalReason[] = ['signature_stale', 'signature_future', 'signature_mismatch', 'signature_malformed', 'signature_missing'];

export class CustomerAuthenticator {
  /** Customers that can authenticate a delivery (secrets or headers, or any when unsigned deliveries are accepted). */
  readonly receiving: string[];
  /** Customers with neither secrets nor headers whose deliveries are refused (unsigned deliveries not accepted). */
  readonly unprotected: string[];
  /** Every custom header name (lower case) some customer requires: a request may carry each once only. */
  readonly headerNames: string[];
  readonly #customers: PreparedCustomer[];
  readonly #acceptUnsigned: boolean;

  constructor(customers: readonly CustomerConfig[], options: { acceptUnsigned?: boolean } = {}) {
    this.#acceptUnsigned = options.acceptUnsigned === true;
    this.#customers = customers.map((c) => ({
      id: c.id,
      secrets: c.webhookSecrets.filter((s) => s.length > 0),
      previousUntil: c.webhookPreviousSecretUntil,
      headers: Object.entries(c.webhookHeaders).map(([name, value]) => [name.toLowerCase(), sha256(value)] as [string, Buffer]),
    }));
    const isProtected = (c: PreparedCustomer) => c.secrets.length > 0 || c.headers.length > 0;
    this.unprotected = this.#acceptUnsigned ? [] : this.#customers.filter((c) => !isProtected(c)).map((c) => c.id);
    this.receiving = this.#customers.filter((c) => this.#acceptUnsigned || isProtected(c)).map((c) => c.id);
    this.headerNames = [...new Set(this.#customers.flatMap((c) => c.headers.map(([name]) => name)))];
  }

  /** From the headers, before the body: the candidates and their verifiers, or a 401 Refusal. */
  prepare(headers: IncomingHttpHeaders, nowMs: number, toleranceMs: number): PreparedRequest {
    const matched: string[] = [];
    const verifiers: Array<{ customerId: string; verifier: SignatureVerifier }> = [];
    const failures: RefusalReason[] = [];
    let headersMatchedSomewhere = false;
    for (const customer of this.#customers) {
      const isProtected = customer.secrets.length > 0 || customer.headers.length > 0;
      if (!isProtected) {
        if (this.#acceptUnsigned) matched.push(customer.id);
        continue;
      }
      // Every header of every customer is compared (no early exit), so timing does not reveal which one differed.
      const headersOk = customer.headers.reduce((ok, [name, hash]) => headerMatches(headers[name], hash) && ok, true);
      if (!headersOk) continue;
      headersMatchedSomewhere = true;
      if (customer.secrets.length === 0) {
        matched.push(customer.id);
        continue;
      }
      const secrets = customer.previousUntil !== undefined && nowMs > customer.previousUntil ? customer.secrets.slice(0, 1) : customer.secrets;
      try {
        verifiers.push({ customerId: customer.id, verifier: createSignatureVerifier({ header: headers[SIGNATURE_HEADER], secrets, toleranceMs }) });
      } catch (error) {
        if (!(error instanceof SignatureVerificationError)) throw error;
        failures.push(SIGNATURE_REASON[error.reason]);
      }
    }
    if (matched.length === 0 && verifiers.length === 0) {
      if (!headersMatchedSomewhere) throw new Refusal(401, 'header_mismatch');
      throw new Refusal(401, PRECEDENCE.find((r) => failures.includes(r)) ?? 'signature_missing');
    }
    return {
      matched,
      verifiers,
      update(chunk) {
        for (const v of verifiers) v.verifier.update(chunk);
      },
    };
  }

  /** After the body: the customers that authenticated, or a 401 Refusal with the most specific reason. */
  finish(prepared: PreparedRequest, nowMs: number): Authentication {
    const customerIds = [...prepared.matched];
    const secretIndex = new Map<string, number>();
    const failures: RefusalReason[] = [];
    for (const { customerId, verifier } of prepared.verifiers) {
      try {
        secretIndex.set(customerId, verifier.verify(nowMs).secretIndex);
        customerIds.push(customerId);
      } catch (error) {
        if (!(error instanceof SignatureVerificationError)) throw error;
        failures.push(SIGNATURE_REASON[error.reason]);
      }
    }
    if (customerIds.length === 0) throw new Refusal(401, PRECEDENCE.find((r) => failures.includes(r)) ?? 'signature_mismatch');
    return { customerIds, secretIndex };
  }

  /** After parsing: the body's CustomerId must be a customer that authenticated. */
  customerOf(auth: Authentication, customerId: string): string {
    const wanted = customerId.toLowerCase();
    const match = auth.customerIds.find((id) => id.toLowerCase() === wanted);
    if (match === undefined) throw new Refusal(401, 'customer_mismatch', { customerId });
    return match;
  }
}
