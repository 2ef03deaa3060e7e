import { createHmac } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { gzipSync } from 'node:zlib';
import type { Clock } from '../clock.ts';
import type { Logger } from '../logger.ts';
import type { DataModel, CustomerData, Observation } from './data.ts';
import { hashString, Tag, uuidFrom } from './ids.ts';
import type { SandboxStats } from './interfaces.ts';
import type { WebhookRecord, WebhookRegistry } from './webhook-registry.ts';

export interface DeliveryItem {
  FloorSpaceId: string;
  OccupancyStatus: string;
  /** null from presence-only sensors (the `presence` variant), which count nobody. */
  Headcount: number | null;
}

interface Pending {
  id: string;
  webhookId: string;
  customerId: string;
  type: string;
  createdMs: number;
  data: DeliveryItem[];
  /** Attempts already made. */
  attempts: number;
  dueMs: number;
}

export interface DeliveryEngineOptions {
  model: DataModel;
  registry: WebhookRegistry;
  clock: Clock;
  stats: SandboxStats;
  logger: Logger;
  timeoutMs: number;
  maxAttempts: number;
  retryBaseMs: number;
  rejectUnauthorized: boolean;
  dropEvery: number;
  /**
   * The readings of tick k the platform holds (and so delivers): default every floor space's; the `change` variant's
   * only its status changes (src/sandbox/variants/registry.ts). A tick with none sends no delivery.
   */
  tickReadings?(customer: CustomerData, k: number): Observation[];
  /** false: the sensors count nobody, and every item's Headcount is null. Default true. */
  headcount?: boolean;
}

/** The signature header of section 5.1: HMAC-SHA-256 over `<t>.` + the uncompressed body, uppercase hex. */
export function signatureHeader(secret: string, t: number, rawBody: Buffer): string {
  const s = createHmac('sha256', Buffer.from(secret, 'utf8'))
    .update(Buffer.from(`${t}.`, 'utf8'))
    .update(rawBody)
    .digest('hex')
    .toUpperCase();
  return `t=${t},s=${s}`;
}

function subscribes(hook: WebhookRecord, type: string): boolean {
  return hook.eventTypes.some((t) => t.toLowerCase() === type.toLowerCase());
}

/**
 * Queues one Occupancy delivery per tick that becomes visible, per webhook, and sends what is due at the sandbox
 * clock's now. Retries are due at now + retryBaseMs * 2^(attempt-1) on the same clock, so tests drive them with a
 * FakeClock; only the per-attempt timeout is real time.
 */
export class DeliveryEngine {
  readonly #o: DeliveryEngineOptions;
  #pending: Pending[] = [];
  #chain: Promise<void> = Promise.resolve();
  #testCounter = 0;
  readonly #abort = new AbortController();

  constructor(options: DeliveryEngineOptions) {
    this.#o = options;
  }

  /** Serialized: a pump waits for the previous one, so ticks are queued once and attempts never overlap per webhook. */
  pump(): Promise<void> {
    const run = this.#chain.then(() => this.#pumpOnce());
    this.#chain = run.catch((error: unknown) => this.#o.logger.error({ err: error }, 'sandbox delivery pump failed'));
    return run;
  }

  get pendingCount(): number {
    return this.#pending.length;
  }

  /** The dev-mode test delivery: the latest visible tick's data, sent at once; retried like any other if it fails. */
  async sendTest(hook: WebhookRecord, type: string): Promise<boolean> {
    const { model, clock } = this.#o;
    const customer = model.requireCustomer(hook.customerId);
    const now = clock.now();
    const k = this.#latestVisibleTick(customer, now);
    const pending: Pending = {
      id: uuidFrom([hashString(hook.id), Tag.delivery, -1 - this.#testCounter++]),
      webhookId: hook.id,
      customerId: hook.customerId,
      type,
      createdMs: k === undefined ? now : model.tickCreatedMs(k),
      data: k === undefined || type.toLowerCase() !== 'occupancy' ? [] : this.#tickData(customer, k),
      attempts: 0,
      dueMs: now,
    };
    return this.#attempt(pending);
  }

  async close(): Promise<void> {
    this.#abort.abort(new Error('sandbox closing'));
    await this.#chain;
  }

  async #pumpOnce(): Promise<void> {
    const { model, registry, clock } = this.#o;
    const now = clock.now();
    for (const hook of registry.all()) {
      if (now <= hook.queuedUpToMs) continue;
      if (subscribes(hook, 'Occupancy')) {
        const customer = model.requireCustomer(hook.customerId);
        for (const k of model.ticksBecomingVisible(customer, hook.queuedUpToMs, now)) {
          const data = this.#tickData(customer, k);
          if (data.length === 0) continue;
          if (this.#o.dropEvery > 0 && k % this.#o.dropEvery === 0) {
            this.#o.stats.deliveries.dropped += data.length;
            continue;
          }
          this.#pending.push({
            id: uuidFrom([hashString(hook.id), Tag.delivery, k]),
            webhookId: hook.id,
            customerId: hook.customerId,
            type: 'Occupancy',
            createdMs: model.tickCreatedMs(k),
            data,
            attempts: 0,
            dueMs: model.tickVisibleAtMs(customer, k),
          });
        }
      }
      hook.queuedUpToMs = now;
    }
    const due = this.#pending.filter((p) => p.dueMs <= now);
    this.#pending = this.#pending.filter((p) => p.dueMs > now);
    const byHook = new Map<string, Pending[]>();
    for (const p of due.sort((a, b) => a.dueMs - b.dueMs || a.createdMs - b.createdMs)) {
      const list = byHook.get(p.webhookId) ?? [];
      list.push(p);
      byHook.set(p.webhookId, list);
    }
    // Webhooks are independent receivers: send to them in parallel, but in order within one webhook.
    await Promise.all(
      [...byHook.values()].map(async (list) => {
        for (const p of list) {
          if (this.#abort.signal.aborted) return;
          await this.#attempt(p);
        }
      }),
    );
  }

  #tickData(customer: CustomerData, k: number): DeliveryItem[] {
    const counted = this.#o.headcount ?? true;
    const rows = this.#o.tickReadings ? this.#o.tickReadings(customer, k) : this.#o.model.tickObservations(customer, k);
    return rows.map((o) => ({
      FloorSpaceId: o.floorSpaceId,
      OccupancyStatus: o.occupancyStatus,
      Headcount: counted ? o.headcount : null,
    }));
  }

  #latestVisibleTick(customer: CustomerData, now: number): number | undefined {
    const { model } = this.#o;
    let k = Math.floor((now - model.dataStartMs) / model.intervalMs);
    const lowest = k - Math.ceil(model.lateArrivalMaxMs / model.intervalMs) - 1;
    for (; k >= Math.max(0, lowest); k--) if (model.tickVisibleAtMs(customer, k) <= now) return k;
    return undefined;
  }

  /** One attempt; on failure it schedules the next one or gives up after maxAttempts. Resolves true on 2xx. */
  async #attempt(p: Pending): Promise<boolean> {
    const { registry, clock, stats, logger } = this.#o;
    const hook = registry.get(p.customerId, p.webhookId);
    if (!hook) return false;
    const sentMs = clock.now();
    const raw = Buffer.from(
      JSON.stringify({
        Id: p.id,
        Type: p.type,
        CustomerId: p.customerId,
        Created: new Date(p.createdMs).toISOString(),
        Sent: new Date(sentMs).toISOString(),
        Data: p.data,
      }),
      'utf8',
    );
    const headers: Record<string, string | string[]> = {};
    for (const h of hook.additionalHeaders) {
      const existing = headers[h.key];
      headers[h.key] = existing === undefined ? h.value : [...(Array.isArray(existing) ? existing : [existing]), h.value];
    }
    headers['Content-Type'] = 'application/json; charset=utf-8';
    headers['User-Agent'] = 'occupancy-sync-sandbox';
    if (hook.secret !== undefined) headers['X-Service-Signature'] = signatureHeader(hook.secret, Math.floor(sentMs / 1000), raw);
    const body = hook.compress ? gzipSync(raw) : raw;
    if (hook.compress) headers['Content-Encoding'] = 'gzip';
    headers['Content-Length'] = String(body.length);

    p.attempts++;
    stats.deliveries.attempts++;
    let outcome: string;
    try {
      const status = await this.#post(hook.url, headers, body);
      if (status >= 200 && status < 300) {
        stats.deliveries.succeeded++;
        logger.debug({ webhookId: hook.id, deliveryId: p.id, attempt: p.attempts, status }, 'sandbox delivery accepted');
        return true;
      }
      outcome = `HTTP ${status}`;
    } catch (error) {
      outcome = (error as Error).message;
    }
    stats.deliveries.failed++;
    if (p.attempts < this.#o.maxAttempts && !this.#abort.signal.aborted) {
      p.dueMs = clock.now() + this.#o.retryBaseMs * 2 ** (p.attempts - 1);
      this.#pending.push(p);
    } else {
      stats.deliveries.abandoned++;
    }
    logger.info({ webhookId: hook.id, deliveryId: p.id, attempt: p.attempts, outcome }, 'sandbox delivery failed');
    return false;
  }

  #post(url: string, headers: Record<string, string | string[]>, body: Buffer): Promise<number> {
    return new Promise((resolve, reject) => {
      const target = new URL(url);
      const client = target.protocol === 'https:' ? https : http;
      const req = client.request(target, {
        method: 'POST',
        headers,
        // One connection per attempt: a kept-alive socket would hold the receiver's server open after a test.
        agent: false,
        signal: this.#abort.signal,
        rejectUnauthorized: this.#o.rejectUnauthorized,
      });
      const timer = setTimeout(() => req.destroy(new Error(`no answer within ${this.#o.timeoutMs} ms`)), this.#o.timeoutMs);
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => {
          clearTimeout(timer);
          resolve(res.statusCode ?? 0);
        });
        res.on('error', (error) => {
          clearTimeout(timer);
          reject(error);
        });
      });
      req.on('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      req.end(body);
    });
  }
}
