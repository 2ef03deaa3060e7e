import type { Clock } from '../clock.ts';
import type { CustomerConfig } from '../config.ts';
import type { Logger } from '../logger.ts';
import type { Metrics } from '../metrics.ts';
import type { Store } from '../store/types.ts';
import { reconciliationSince } from '../store/status-queries.ts';
import type { AnyStream } from '../sync/stream.ts';
import { toIsoUtc } from '../time.ts';
import { checkCompleteness, completenessLines, type CompletenessFinding } from './completeness.ts';

/**
 * The checks for data that goes missing without an error: the completeness alarm (completeness.ts) and the webhook
 * and poll reconciliation (the webhook_reconciliation view), for `status`, and run every few minutes by `serve` for
 * /healthz (degraded) and /metrics. Both read the database only, so every instance reports the same.
 */

export interface ReconciliationCount {
  customerId: string;
  /** UTC days counted: today and yesterday. */
  since: string;
  missedDeliveries: number;
  unconfirmedDeliveries: number;
}

export interface DataChecks {
  completeness: CompletenessFinding[];
  reconciliation: ReconciliationCount[];
}

export interface DataCheckOptions {
  store: Store;
  streams: ReadonlyArray<AnyStream>;
  customers: ReadonlyArray<CustomerConfig>;
  settings: { completenessMinShare: number; completenessWindowMs: number };
  now: number;
}

/** Customers with a webhook subscription configured: only for them is a polled reading without a delivery missed. */
function withWebhooks(customers: ReadonlyArray<CustomerConfig>): string[] {
  return customers.filter((c) => c.webhookSecrets.length > 0 || Object.keys(c.webhookHeaders).length > 0).map((c) => c.id);
}

export async function runDataChecks(options: DataCheckOptions): Promise<DataChecks> {
  const { store } = options;
  const wanted = new Set(options.customers.map((c) => c.id));
  const completeness = (
    await checkCompleteness(store, options.streams, { minShare: options.settings.completenessMinShare, windowMs: options.settings.completenessWindowMs })
  ).filter((f) => wanted.size === 0 || wanted.has(f.customerId));
  const since = toIsoUtc(options.now - 86_400_000).slice(0, 10);
  const reconciliation: ReconciliationCount[] = [];
  for (const customerId of withWebhooks(options.customers)) {
    const row = await reconciliationSince(store, customerId, since);
    reconciliation.push({ customerId, since, missedDeliveries: Number(row?.missed ?? 0), unconfirmedDeliveries: Number(row?.unconfirmed ?? 0) });
  }
  return { completeness, reconciliation };
}

/** Lines for `status` and /healthz warnings: streams far below their past, deliveries missing either way. */
export function dataCheckLines(checks: DataChecks): string[] {
  return [
    ...completenessLines(checks.completeness),
    ...checks.reconciliation
      .filter((r) => r.missedDeliveries > 0 || r.unconfirmedDeliveries > 0)
      .map(
        (r) =>
          `  ${r.customerId} webhooks since ${r.since}: ${r.missedDeliveries} reading(s) polling found that no delivery brought, ` +
          `${r.unconfirmedDeliveries} delivered that polling never found (view webhook_reconciliation; check the subscription with \`occupancy-sync webhook list\`)`,
      ),
  ];
}

export interface DataCheckWatch {
  /** The last finished checks, if any. */
  readonly latest: DataChecks | undefined;
  refresh(): Promise<DataChecks>;
  stop(): void;
}

/** `serve`: the checks now and every `everyMs`, into /metrics and for /healthz. */
export function watchData(options: Omit<DataCheckOptions, 'now'> & { clock: Clock; logger: Logger; metrics?: Metrics; everyMs?: number }): DataCheckWatch {
  let latest: DataChecks | undefined;
  let running: Promise<DataChecks> | undefined;
  const refresh = (): Promise<DataChecks> =>
    (running ??= runDataChecks({ ...options, now: options.clock.now() })
      .then((checks) => {
        latest = checks;
        options.metrics?.observeDataChecks(checks);
        return checks;
      })
      .finally(() => (running = undefined)));
  const pass = () => void refresh().catch((error: unknown) => options.logger.warn({ err: error }, 'could not check completeness and webhook reconciliation'));
  const timer = setInterval(pass, options.everyMs ?? 300_000);
  timer.unref();
  pass();
  return {
    get latest() {
      return latest;
    },
    refresh,
    stop: () => clearInterval(timer),
  };
}
