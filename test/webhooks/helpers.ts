import { randomUUID } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { CustomerConfig } from '../../src/config.ts';
import type { DeliveryRecord, OccupancyRecord, Store } from '../../src/store/types.ts';

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  json: Record<string, unknown> | undefined;
}

/**
 * A raw POST (or any method) with exact bytes and headers. It resolves on the response even when the receiver closes
 * the connection while the body is still being uploaded (what it does for a refused oversized body).
 */
export function send(
  url: string,
  options: { method?: string; headers?: Record<string, string | string[]>; body?: Buffer | string; chunked?: boolean; path?: string } = {},
): Promise<RawResponse> {
  const target = new URL(url);
  if (options.path !== undefined) target.pathname = options.path;
  const body = options.body === undefined ? undefined : Buffer.isBuffer(options.body) ? options.body : Buffer.from(options.body, 'utf8');
  const headers: Record<string, string | string[]> = { ...options.headers };
  if (body && !options.chunked) headers['Content-Length'] = String(body.length);
  return new Promise((resolve, reject) => {
    const client = target.protocol === 'https:' ? https : http;
    const req = client.request(target, { method: options.method ?? 'POST', headers, agent: false, rejectUnauthorized: false });
    let answered = false;
    req.on('response', (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', () => {});
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: Record<string, unknown> | undefined;
        try {
          json = text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, json });
      });
    });
    req.on('error', (error) => {
      // EPIPE/ECONNRESET after the answer arrived: the receiver stopped reading a refused upload, as intended.
      if (!answered) reject(error);
    });
    if (body && options.chunked) {
      // Several writes without Content-Length: Transfer-Encoding chunked, so only the streaming count can stop it.
      const step = 64 * 1024;
      for (let i = 0; i < body.length; i += step) req.write(body.subarray(i, i + step));
      req.end();
    } else {
      req.end(body);
    }
  });
}

export const CUSTOMER_A = '0a1b2c3d-0000-4000-8000-00000000000a';
export const CUSTOMER_B = '0a1b2c3d-0000-4000-8000-00000000000b';
export const SECRET_A = 'A'.repeat(20) + 'secret-of-customer-a-' + 'a'.repeat(40);
export const SECRET_A_OLD = 'O'.repeat(20) + 'previous-secret-of-a-' + 'o'.repeat(40);
export const SECRET_B = 'B'.repeat(20) + 'secret-of-customer-b-' + 'b'.repeat(40);
export const HEADER_B = { name: 'X-Webhook-Token', value: 'token-value-of-customer-b-12345' };

export function customer(id: string, overrides: Partial<CustomerConfig> = {}): CustomerConfig {
  return { id, apiKey: `key-${id.slice(-4)}`, apiSecret: `api-secret-${id}`, webhookSecrets: [], webhookHeaders: {}, ...overrides };
}

export interface DeliveryBody {
  Id: string;
  Type: string;
  CustomerId: string;
  Created: string;
  Sent: string;
  Data: unknown[];
}

export function delivery(overrides: Partial<DeliveryBody> = {}): DeliveryBody {
  return {
    Id: randomUUID(),
    Type: 'Occupancy',
    CustomerId: CUSTOMER_A,
    Created: '2026-01-01T10:00:00Z',
    Sent: '2026-01-01T10:00:01Z',
    Data: [
      { FloorSpaceId: '9e8d7c6b-0000-4000-8000-000000000001', OccupancyStatus: 'CurrentlyOccupied', Headcount: 3 },
      { FloorSpaceId: '9e8d7c6b-0000-4000-8000-000000000002', OccupancyStatus: 'NotOccupied', Headcount: 0 },
    ],
    ...overrides,
  };
}

/**
 * Delegates to a real store, but fails storeDelivery while `failing()` says so, or for the first `failFirst` calls:
 * the storage failures the receiver must turn into 503.
 */
export function flakyStore(inner: Store, options: { failFirst?: number; failing?: () => boolean } = {}): Store & { calls: number; failures: number } {
  let calls = 0;
  let failures = 0;
  const storeDelivery = async (d: DeliveryRecord, rows: ReadonlyArray<OccupancyRecord>) => {
    calls += 1;
    if (calls <= (options.failFirst ?? 0) || options.failing?.()) {
      failures += 1;
      throw new Error('injected storage failure');
    }
    return inner.storeDelivery(d, rows);
  };
  // A Proxy rather than a subclass: the real store keeps its private fields, so its methods run bound to it.
  return new Proxy(inner, {
    get(target, prop) {
      if (prop === 'storeDelivery') return storeDelivery;
      if (prop === 'calls') return calls;
      if (prop === 'failures') return failures;
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  }) as Store & { calls: number; failures: number };
}
