import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { CustomerConfig } from '../config.ts';
import { SignatureVerificationError } from '../errors.ts';
import { SIGNATURE_HEADER, verifySignature } from './signature.ts';
import { Refusal, type RefusalReason } from './refusal.ts';

/**
 * Which configured customer sent this delivery? Headers and signature are checked before the body is parsed (so
 * nothing unauthenticated reaches the JSON parser), which means the body's CustomerId is not known yet: every
 * customer's header set and secrets are tried (there are typically one or two). A customer matches when all its
 * custom headers are present and equal, and, if it has secrets, one of them verifies the signature. The body's
 * CustomerId must then be one of the matching customers.
 */

export type AuthMode =
  /** At least one customer has secrets or headers: only those customers' deliveries are accepted. */
  | 'protected'
  /** No customer has any secret or header: unsigned deliveries are accepted (only behind a trusted proxy). */
  | 'open';

export interface Authentication {
  /** Ids of the customers whose headers and signature verified (open mode: every configured customer). */
  customerIds: string[];
  /** Which secret verified, per customer id (absent when the customer is matched by headers only). */
  secretIndex: Map<string, number>;
}

interface PreparedCustomer {
  id: string;
  secrets: string[];
  /** Header name (lower case, as node:http gives them) -> SHA-256 of the expected value. */
  headers: Array<[string, Buffer]>;
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
  readonly mode: AuthMode;
  /** Customers with neither secrets nor headers while others have some: their deliveries are refused. */
  readonly unprotected: string[];
  readonly #customers: PreparedCustomer[];
  readonly #configuredIds: string[];

  constructor(customers: readonly CustomerConfig[]) {
    this.#customers = customers.map((c) => ({
      id: c.id,
      secrets: c.webhookSecrets.filter((s) => s.length > 0),
      headers: Object.entries(c.webhookHeaders).map(([name, value]) => [name.toLowerCase(), sha256(value)] as [string, Buffer]),
    }));
    this.#configuredIds = customers.map((c) => c.id);
    const isProtected = (c: PreparedCustomer) => c.secrets.length > 0 || c.headers.length > 0;
    this.mode = this.#customers.some(isProtected) ? 'protected' : 'open';
    this.unprotected = this.mode === 'protected' ? this.#customers.filter((c) => !isProtected(c)).map((c) => c.id) : [];
  }

  /** Checks custom headers and the signature of one request. Throws a 401 `Refusal` when no customer matches. */
  authenticate(headers: IncomingHttpHeaders, rawBody: Buffer, nowMs: number, toleranceMs: number): Authentication {
    if (this.mode === 'open') return { customerIds: [...this.#configuredIds], secretIndex: new Map() };
    const customerIds: string[] = [];
    const secretIndex = new Map<string, number>();
    const failures: RefusalReason[] = [];
    let headersMatchedSomewhere = false;
    for (const customer of this.#customers) {
      if (customer.secrets.length === 0 && customer.headers.length === 0) continue;
      // Every header of every customer is compared (no early exit), so timing does not reveal which one differed.
      const headersOk = customer.headers.reduce((ok, [name, hash]) => headerMatches(headers[name], hash) && ok, true);
      if (!headersOk) continue;
      headersMatchedSomewhere = true;
      if (customer.secrets.length === 0) {
        customerIds.push(customer.id);
        continue;
      }
      try {
        const verified = verifySignature({
          header: headers[SIGNATURE_HEADER],
          rawBody,
          secrets: customer.secrets,
          toleranceMs,
          now: nowMs,
        });
        customerIds.push(customer.id);
        secretIndex.set(customer.id, verified.secretIndex);
      } catch (error) {
        if (!(error instanceof SignatureVerificationError)) throw error;
        failures.push(SIGNATURE_REASON[error.reason]);
      }
    }
    if (customerIds.length > 0) return { customerIds, secretIndex };
    if (!headersMatchedSomewhere) throw new Refusal(401, 'header_mismatch');
    const reason = PRECEDENCE.find((r) => failures.includes(r)) ?? 'signature_mismatch';
    throw new Refusal(401, reason);
  }

  /**
   * After parsing: the body's CustomerId must be a customer that authenticated. In open mode with no customers
   * configured at all (a bare development receiver), any customer is accepted.
   */
  checkCustomer(auth: Authentication, customerId: string): string {
    if (this.mode === 'open' && this.#configuredIds.length === 0) return customerId;
    const wanted = customerId.toLowerCase();
    const match = auth.customerIds.find((id) => id.toLowerCase() === wanted);
    if (match === undefined) throw new Refusal(401, 'customer_mismatch', { customerId });
    return match;
  }
}
