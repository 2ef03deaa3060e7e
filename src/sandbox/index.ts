// Public surface of the sandbox: a local stand-in for the platform's external API.
export type {
  FaultOptions,
  WebhookDeliveryOptions,
  SandboxOptions,
  SandboxScope,
  SandboxKey,
  SandboxCustomer,
  GroundTruthObservation,
  ObservationRange,
  SandboxWebhookView,
  SandboxStats,
  Sandbox,
  MisbehaviourKind,
} from './interfaces.ts';
export { MISBEHAVIOUR_KINDS } from './misbehave.ts';
export { startSandbox } from './server.ts';
