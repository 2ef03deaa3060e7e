// Public surface of the library. Everything else is internal.
export { resolveConfig, type Config, type CustomerConfig } from './config.ts';
export * from './errors.ts';
export { systemClock, FakeClock, type Clock } from './clock.ts';
export type * from './store/types.ts';
export {
  verifySignature,
  parseSignatureHeader,
  computeSignature,
  signatureHeader,
  SIGNATURE_HEADER,
  DEFAULT_SIGNATURE_TOLERANCE_MS,
} from './webhooks/signature.ts';
