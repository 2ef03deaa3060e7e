// Public surface of the webhooks module: signature verification (usable on its own), the receiver and management.
export {
  SIGNATURE_HEADER,
  DEFAULT_SIGNATURE_TOLERANCE_MS,
  parseSignatureHeader,
  computeSignature,
  signatureHeader,
  verifySignature,
  type ParsedSignature,
  type VerifySignatureOptions,
  type VerifiedSignature,
} from './signature.ts';
export {
  startReceiver,
  createWebhookHandler,
  DEFAULT_WEBHOOK_PATH,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_MAX_DECOMPRESSED_BYTES,
  type Receiver,
  type ReceiverOptions,
  type WebhookHandler,
  type WebhookHandlerOptions,
  type WebhookOutcome,
} from './receiver.ts';
export type { RefusalReason } from './refusal.ts';
export { serveWebhooks, type ServeWebhooksOptions } from './serve.ts';
export {
  createWebhookAdmin,
  generateSecret,
  parseHeaderFlag,
  parseHeaderFlags,
  validateWebhookUrl,
  validateSecret,
  readSecretFile,
  writeSecretFile,
  GENERATED_SECRET_BYTES,
  type WebhookAdmin,
  type WebhookView,
  type WebhookHeader,
  type RegisterWebhookInput,
  type UpdateWebhookInput,
} from './admin.ts';
