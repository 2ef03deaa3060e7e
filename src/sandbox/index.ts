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
  TruthBuilding,
  TruthFloor,
  TruthFloorSpace,
  MisbehaviourKind,
  ApiVariant,
} from './interfaces.ts';
export type { ApiVariantInfo, StatusSpelling } from './api-variants.ts';
export { API_VARIANTS, API_VARIANT_INFO, isApiVariant, spellStatus } from './api-variants.ts';
export { BUILDINGS_CAP, HOSTILE_VALUES, MISBEHAVIOUR_KINDS } from './misbehave.ts';
export { startSandbox } from './server.ts';
