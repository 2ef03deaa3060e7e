import { ConfigError } from './errors.ts';
import { redactUrl } from './net.ts';

/**
 * OpenTelemetry's own variables (the OTEL_* names every SDK reads), resolved once like the rest of the configuration.
 * Tracing is off unless an OTLP endpoint is set; OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none keep it off.
 */
export interface TelemetryConfig {
  /** The full OTLP/HTTP traces URL (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces). */
  tracesUrl: string;
  /** Headers sent with every export (OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TRACES_HEADERS): often a token. */
  headers: Record<string, string>;
  serviceName: string;
  /** OTEL_RESOURCE_ATTRIBUTES, parsed. */
  resource: Record<string, string>;
  timeoutMs: number;
}

type Env = Record<string, string | undefined>;

/** `key=value,key2=value2`, values URL-encoded (the W3C baggage form the OpenTelemetry spec uses). */
function pairs(variable: string, raw: string | undefined, secret: boolean): Record<string, string> {
  const out: Record<string, string> = {};
  if (!raw?.trim()) return out;
  for (const part of raw.split(',')) {
    const eq = part.indexOf('=');
    const key = part.slice(0, eq).trim();
    if (eq <= 0 || !key) {
      const shown = secret ? `(${raw.length} characters, not shown)` : JSON.stringify(raw);
      throw new ConfigError(`${variable}=${shown}: not a list of key=value pairs. Fix: write e.g. ${variable}=api-key=abc123,tenant=ops`);
    }
    try {
      out[key] = decodeURIComponent(part.slice(eq + 1).trim());
    } catch {
      throw new ConfigError(`${variable}: the value of ${key} is not URL-encoded correctly. Fix: percent-encode commas and other reserved characters`);
    }
  }
  return out;
}

function endpointUrl(variable: string, raw: string): URL {
  try {
    const url = new URL(raw);
    if (url.protocol === 'http:' || url.protocol === 'https:') return url;
  } catch {
    // Reported below.
  }
  throw new ConfigError(`${variable}=${JSON.stringify(redactUrl(raw))}: not an http(s) URL. Fix: e.g. ${variable}=http://otel-collector:4318`);
}

export function resolveTelemetry(env: Env): TelemetryConfig | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  const exporter = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  if (exporter === 'none') return undefined;
  if (exporter && exporter !== 'otlp') {
    throw new ConfigError(`OTEL_TRACES_EXPORTER=${JSON.stringify(exporter)}: occupancy-sync exports traces over OTLP/HTTP only. Fix: unset it, or set otlp (or none)`);
  }
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (!traces && !base) return undefined;
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL)?.trim();
  if (protocol === 'grpc') {
    throw new ConfigError('OTEL_EXPORTER_OTLP_PROTOCOL=grpc: occupancy-sync exports traces over OTLP/HTTP (JSON). Fix: point it at the collector\'s HTTP port (4318) and unset the protocol');
  }
  const tracesUrl = traces
    ? endpointUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', traces).href
    : new URL('v1/traces', endpointUrl('OTEL_EXPORTER_OTLP_ENDPOINT', base!).href.replace(/\/?$/, '/')).href;
  const timeoutRaw = (env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT ?? env.OTEL_EXPORTER_OTLP_TIMEOUT)?.trim();
  const timeoutMs = timeoutRaw ? Number(timeoutRaw) : 10_000;
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) {
    throw new ConfigError(`OTEL_EXPORTER_OTLP_TIMEOUT=${JSON.stringify(timeoutRaw)}: not a whole number of milliseconds. Fix: e.g. 10000`);
  }
  const resource = pairs('OTEL_RESOURCE_ATTRIBUTES', env.OTEL_RESOURCE_ATTRIBUTES, false);
  return {
    tracesUrl,
    headers: {
      ...pairs('OTEL_EXPORTER_OTLP_HEADERS', env.OTEL_EXPORTER_OTLP_HEADERS, true),
      ...pairs('OTEL_EXPORTER_OTLP_TRACES_HEADERS', env.OTEL_EXPORTER_OTLP_TRACES_HEADERS, true),
    },
    serviceName: env.OTEL_SERVICE_NAME?.trim() || resource['service.name'] || 'occupancy-sync',
    resource,
    timeoutMs,
  };
}
