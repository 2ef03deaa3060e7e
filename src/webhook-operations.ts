/**
 * The webhook operations occupancy-sync runs on the platform, and how a definitions file adapts each one (read by
 * src/sync/definitions.ts, run by src/webhooks/admin.ts): the document to send, where the webhook is in its answer,
 * where the platform lists refusals (`userErrors`), or that the platform has no such operation. Core: both layers
 * read the one definition.
 */

export const WEBHOOK_OPERATIONS = ['registerWebhook', 'updateWebhook', 'webhooks', 'sendTestEvent'] as const;
export type WebhookOperation = (typeof WEBHOOK_OPERATIONS)[number];

export type WebhookOperationSpec =
  | {
      /** Absolute path of the document (one named operation). */
      document: string;
      /** Path from `data` to the webhook (a list of them for `webhooks`; `[]` walks a list: `subs.edges[].node`). */
      result: string;
      /** Path from `data` to a list of `{ message, field }` the platform fills when it refuses (Shopify's userErrors). */
      errors?: string;
    }
  | { absent: true };

export type WebhookOperationSpecs = Partial<Record<WebhookOperation, WebhookOperationSpec>>;

/**
 * The variables occupancy-sync can send to a webhook operation: `input` whole, and each of its fields on its own,
 * so a document can build an input of another shape (`{ callbackUrl: $url, topics: [OCCUPANCY] }`). Only the
 * variables a document declares are sent.
 */
export const WEBHOOK_VARIABLES: Record<WebhookOperation, { any: readonly string[][]; optional: readonly string[] }> = {
  registerWebhook: { any: [['input', 'url']], optional: ['eventTypes', 'additionalHeaders', 'signatureSecret', 'compress'] },
  updateWebhook: { any: [['id', 'webhookId'], ['input', 'url', 'additionalHeaders', 'signatureSecret', 'clearSignatureSecret', 'compress']], optional: [] },
  webhooks: { any: [], optional: [] },
  sendTestEvent: { any: [['webhookId', 'id']], optional: ['type'] },
};

/** Follows a result path (`a.b`, `a.edges[].node`) in an answer; undefined where a step is missing. */
export function readResult(data: unknown, path: string): unknown {
  const steps = path.split('.');
  const walk = (value: unknown, i: number): unknown => {
    if (i === steps.length) return value;
    const step = steps[i]!;
    const list = step.endsWith('[]');
    const key = list ? step.slice(0, -2) : step;
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
    const next = (value as Record<string, unknown>)[key];
    if (!list) return walk(next, i + 1);
    return Array.isArray(next) ? next.map((item) => walk(item, i + 1)) : undefined;
  };
  return walk(data, 0);
}
