import { gzipSync } from 'node:zlib';
import { signatureHeader } from '../../src/webhooks/signature.ts';
import { prng } from '../support/random.ts';

/**
 * A seeded stream of webhook requests, valid and hostile, each with the answer the receiver owes it. The generator
 * keeps only what the final comparison needs (ids and item keys of what must be stored), never the bodies, so the
 * process's memory at the end reflects the receiver, not the test.
 */

export const NOW = Date.UTC(2026, 0, 8, 12, 0, 0);
export const T = Math.floor(NOW / 1000);
export const TOLERANCE_MS = 300_000;
export const MAX_BODY_BYTES = 64 * 1024;
export const MAX_DECOMPRESSED_BYTES = 256 * 1024;

export const CUSTOMER_A = '5e1a0000-0000-4000-8000-00000000000a';
export const CUSTOMER_B = '5e1a0000-0000-4000-8000-00000000000b';
// Distinct, recognisable values so the suite-wide log audit can look for them.
export const STREAM_SECRET_A = 'stream-secret-A-'.padEnd(80, 'q7Z');
export const STREAM_SECRET_B = 'stream-secret-B-'.padEnd(96, 'x3P');
export const STREAM_WRONG_SECRET = 'stream-wrong-secret-'.padEnd(72, 'w9');
export const STREAM_HEADER_B = { name: 'X-Delivery-Token', value: 'stream-header-token-of-b-2718281828' };

export type Kind =
  | 'valid'
  | 'valid_gzip'
  | 'retry'
  | 'unknown_type'
  | 'tampered'
  | 'wrong_secret'
  | 'stale'
  | 'future'
  | 'unsigned'
  | 'wrong_header'
  | 'customer_mismatch'
  | 'gzip_bomb'
  | 'oversized'
  | 'truncated'
  | 'non_json'
  | 'wrong_shape'
  | 'broken_item';

/** Relative weights: about half the stream is accepted, the rest covers every refusal. */
export const WEIGHTS: Record<Kind, number> = {
  valid: 30,
  valid_gzip: 10,
  retry: 10,
  unknown_type: 4,
  tampered: 5,
  wrong_secret: 5,
  stale: 4,
  future: 4,
  unsigned: 4,
  wrong_header: 4,
  customer_mismatch: 3,
  gzip_bomb: 3,
  oversized: 3,
  truncated: 3,
  non_json: 4,
  wrong_shape: 3,
  broken_item: 3,
};

/** The status and reason the receiver must answer (for truncated: its outcome; the sender is gone by then). */
export const EXPECTED: Record<Kind, { status: number; reason: string }> = {
  valid: { status: 200, reason: 'stored' },
  valid_gzip: { status: 200, reason: 'stored' },
  retry: { status: 200, reason: 'duplicate' },
  unknown_type: { status: 200, reason: 'stored' },
  tampered: { status: 401, reason: 'signature_mismatch' },
  wrong_secret: { status: 401, reason: 'signature_mismatch' },
  stale: { status: 401, reason: 'signature_stale' },
  future: { status: 401, reason: 'signature_future' },
  unsigned: { status: 401, reason: 'signature_missing' },
  // B's header is wrong, so only A (no header) is tried, and B's signature does not verify with A's secret.
  wrong_header: { status: 401, reason: 'signature_mismatch' },
  customer_mismatch: { status: 401, reason: 'customer_mismatch' },
  gzip_bomb: { status: 413, reason: 'decompressed_too_large' },
  oversized: { status: 413, reason: 'body_too_large' },
  truncated: { status: 400, reason: 'body_aborted' },
  non_json: { status: 400, reason: 'invalid_json' },
  wrong_shape: { status: 400, reason: 'invalid_delivery' },
  // One item breaks the stream's declaration: quarantined with its reason, the rest of the delivery stored.
  broken_item: { status: 200, reason: 'stored' },
};

/** What each kind is, for docs/reliability.md. */
export const DESCRIPTION: Record<Kind, string> = {
  valid: 'signed Occupancy delivery (customer A: secret; customer B: secret + custom header)',
  valid_gzip: 'the same, gzip-compressed',
  retry: 'retry of an accepted delivery: same Id, new Sent and t (racing the first copy)',
  unknown_type: 'signed delivery of an unknown Type',
  tampered: 'valid signature, one Headcount digit changed afterwards',
  wrong_secret: 'signed with a secret the receiver does not know',
  stale: 't more than the 300 s tolerance in the past',
  future: 't more than the tolerance in the future',
  unsigned: 'no X-Service-Signature header',
  wrong_header: "customer B's signature with a guessed custom header value",
  customer_mismatch: "customer A's valid signature over a body claiming customer B",
  gzip_bomb: '2 KiB of gzip inflating to 2 MiB (limit 256 KiB)',
  oversized: '68 KiB body (limit 64 KiB)',
  truncated: 'sender hangs up after half the declared body',
  non_json: 'signed body that is not JSON (or empty)',
  wrong_shape: 'signed JSON: no Id, a bad Created date, or Data not a list',
  broken_item: 'signed delivery whose first item has a negative or fractional Headcount',
};

export interface StreamRequest {
  index: number;
  kind: Kind;
  headers: Record<string, string>;
  body: Buffer;
  /** The delivery Id when the request is (or retries) a delivery that must end up stored. */
  storedId?: string;
}

export interface ExpectedDelivery {
  customerId: string;
  /** `${floorSpaceId}|${observedAtIso}|${headcount}` of every occupancy item. */
  items: string[];
  /** Requests carrying this Id that must be answered 200 (the original plus retries). */
  sends: number;
}

// A gzip bomb is the same bytes every time: 2 MiB of zeros in about 2 KiB, 8 x the decompression limit.
const BOMB = gzipSync(Buffer.alloc(8 * MAX_DECOMPRESSED_BYTES));
const OVERSIZED = Buffer.alloc(MAX_BODY_BYTES + 4096, 0x20);

export class StreamGenerator {
  readonly expected = new Map<string, ExpectedDelivery>();
  readonly planned: Record<Kind, number> = Object.fromEntries(Object.keys(WEIGHTS).map((k) => [k, 0])) as Record<Kind, number>;
  readonly #random: () => number;
  readonly #kinds: Kind[] = [];
  /** Accepted deliveries that a later retry may repeat. */
  readonly #retryable: Array<{ id: string; type: string; customerId: string; created: string; data: unknown[] }> = [];
  #tick = 0;

  constructor(seed: number) {
    this.#random = prng(seed);
    for (const [kind, weight] of Object.entries(WEIGHTS) as Array<[Kind, number]>) for (let i = 0; i < weight; i++) this.#kinds.push(kind);
  }

  #uuid(): string {
    const hex = Array.from({ length: 32 }, () => Math.floor(this.#random() * 16).toString(16)).join('');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
  }

  #pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.#random() * items.length)]!;
  }

  /** A fresh Occupancy delivery for one customer: its own floor spaces and tick, so no two deliveries share a row. */
  #delivery(customerId: string, type = 'Occupancy') {
    this.#tick += 1;
    const created = new Date(NOW - 86_400_000 + this.#tick * 1000).toISOString();
    const data =
      type === 'Occupancy'
        ? Array.from({ length: 1 + Math.floor(this.#random() * 3) }, () => {
            const occupied = this.#random() < 0.5;
            return { FloorSpaceId: this.#uuid(), OccupancyStatus: occupied ? 'CurrentlyOccupied' : 'Unoccupied', Headcount: occupied ? 1 + Math.floor(this.#random() * 30) : 0 };
          })
        : [{ Note: 'not an occupancy event' }];
    return { Id: this.#uuid(), Type: type, CustomerId: customerId, Created: created, Sent: new Date(NOW).toISOString(), Data: data };
  }

  #signed(customerId: string, raw: Buffer, options: { secret?: string; t?: number; header?: string } = {}): Record<string, string> {
    const secret = options.secret ?? (customerId === CUSTOMER_A ? STREAM_SECRET_A : STREAM_SECRET_B);
    const headers: Record<string, string> = {
      'content-type': 'application/json; charset=utf-8',
      'x-service-signature': signatureHeader(secret, raw, options.t ?? T),
    };
    if (customerId === CUSTOMER_B) headers[STREAM_HEADER_B.name.toLowerCase()] = options.header ?? STREAM_HEADER_B.value;
    return headers;
  }

  /** `quarantined`: how many leading items break the declaration (stored in quarantine, not in occupancy). */
  #accept(d: { Id: string; CustomerId: string; Created: string; Type: string; Data: unknown[] }, quarantined = 0): void {
    const items =
      d.Type === 'Occupancy'
        ? (d.Data as Array<{ FloorSpaceId: string; Headcount: number }>).slice(quarantined).map((i) => `${i.FloorSpaceId}|${new Date(d.Created).toISOString()}|${i.Headcount}`)
        : [];
    this.expected.set(d.Id, { customerId: d.CustomerId, items, sends: 1 });
    this.#retryable.push({ id: d.Id, type: d.Type, customerId: d.CustomerId, created: d.Created, data: d.Data });
  }

  next(index: number): StreamRequest {
    let kind = this.#pick(this.#kinds);
    if (kind === 'retry' && this.#retryable.length === 0) kind = 'valid';
    this.planned[kind] += 1;
    const customerId = this.#random() < 0.5 ? CUSTOMER_A : CUSTOMER_B;
    const json = (value: unknown) => Buffer.from(JSON.stringify(value), 'utf8');
    switch (kind) {
      case 'valid':
      case 'valid_gzip':
      case 'unknown_type': {
        const d = this.#delivery(customerId, kind === 'unknown_type' ? 'BuildingRenamed' : 'Occupancy');
        const raw = json(d);
        this.#accept(d);
        const headers = this.#signed(customerId, raw);
        if (kind === 'valid_gzip') headers['content-encoding'] = 'gzip';
        return { index, kind, headers, body: kind === 'valid_gzip' ? gzipSync(raw) : raw, storedId: d.Id };
      }
      case 'retry': {
        // The platform's retry: same Id and Created, a new Sent and a new t (within the tolerance).
        const original = this.#pick(this.#retryable);
        const later = 1 + Math.floor(this.#random() * 120);
        const raw = json({ Id: original.id, Type: original.type, CustomerId: original.customerId, Created: original.created, Sent: new Date(NOW + later * 1000).toISOString(), Data: original.data });
        this.expected.get(original.id)!.sends += 1;
        return { index, kind, headers: this.#signed(original.customerId, raw, { t: T + later }), body: raw, storedId: original.id };
      }
      case 'tampered': {
        const d = this.#delivery(customerId);
        const raw = json(d);
        const headers = this.#signed(customerId, raw);
        const changed = Buffer.from(raw);
        // Raise one headcount digit: still valid JSON of the right shape, so only the signature can catch it.
        const at = changed.indexOf('"Headcount":') + '"Headcount":'.length;
        changed[at] = changed[at] === 0x39 ? 0x31 : changed[at]! + 1;
        return { index, kind, headers, body: changed };
      }
      case 'wrong_secret': {
        const raw = json(this.#delivery(customerId));
        return { index, kind, headers: this.#signed(customerId, raw, { secret: STREAM_WRONG_SECRET }), body: raw };
      }
      case 'stale':
      case 'future': {
        const raw = json(this.#delivery(customerId));
        const offset = Math.floor(TOLERANCE_MS / 1000) + 1 + Math.floor(this.#random() * 86_400);
        return { index, kind, headers: this.#signed(customerId, raw, { t: kind === 'stale' ? T - offset : T + offset }), body: raw };
      }
      case 'unsigned': {
        const raw = json(this.#delivery(CUSTOMER_A));
        return { index, kind, headers: { 'content-type': 'application/json' }, body: raw };
      }
      case 'wrong_header': {
        const raw = json(this.#delivery(CUSTOMER_B));
        return { index, kind, headers: this.#signed(CUSTOMER_B, raw, { header: 'stream-header-token-guessed-000000' }), body: raw };
      }
      case 'customer_mismatch': {
        // Customer A's valid signature over a body that claims to be customer B's.
        const raw = json(this.#delivery(CUSTOMER_B));
        return { index, kind, headers: this.#signed(CUSTOMER_A, raw), body: raw };
      }
      case 'gzip_bomb':
        return { index, kind, headers: { ...this.#signed(customerId, BOMB), 'content-encoding': 'gzip' }, body: BOMB };
      case 'oversized':
        return { index, kind, headers: this.#signed(customerId, OVERSIZED), body: OVERSIZED };
      case 'truncated': {
        const raw = json(this.#delivery(customerId));
        return { index, kind, headers: this.#signed(customerId, raw), body: raw };
      }
      case 'non_json': {
        const raw = Buffer.from(this.#pick(['not json', '{"Id": "unterminated', '<xml/>', '[1,2,', '']), 'utf8');
        return { index, kind, headers: this.#signed(customerId, raw), body: raw };
      }
      case 'wrong_shape': {
        const d = this.#delivery(customerId) as Record<string, unknown>;
        const damage = this.#pick(['no-id', 'bad-created', 'data-object']);
        if (damage === 'no-id') delete d.Id;
        if (damage === 'bad-created') d.Created = '2026-01-08 12:00';
        if (damage === 'data-object') d.Data = { FloorSpaceId: 'x' };
        const raw = json(d);
        return { index, kind, headers: this.#signed(customerId, raw), body: raw };
      }
      case 'broken_item': {
        const d = this.#delivery(customerId);
        (d.Data as Array<Record<string, unknown>>)[0]!.Headcount = this.#pick([-1, 1.5]);
        const raw = json(d);
        this.#accept(d, 1);
        return { index, kind, headers: this.#signed(customerId, raw), body: raw, storedId: d.Id };
      }
    }
  }
}
