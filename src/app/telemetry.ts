import { messageOf } from '../errors.ts';
import { globalSecrets, type Logger } from '../logger.ts';
import { redactUrl } from '../net.ts';
import type { TelemetryConfig } from '../telemetry-config.ts';
import { installTracer, type SpanAttributes, type SpanHandle, type Tracer } from '../tracing.ts';

/**
 * Starts OpenTelemetry tracing when the OTEL_* variables ask for it (src/telemetry-config.ts): a tracer provider
 * exporting in batches over OTLP/HTTP, context carried across awaits (AsyncLocalStorage), and the engine's tracer
 * (src/tracing.ts) pointed at it. The packages are loaded here, on demand: with tracing off none of them is.
 */
export interface Telemetry {
  /**
   * Sends what is buffered and stops, within SHUTDOWN_LIMIT_MS (or the export timeout, when shorter): a collector
   * that is down or never answers costs a command at most that, and one warning line.
   */
  shutdown(): Promise<void>;
}

/**
 * The longest the last export may hold a command's exit. A collector that answers takes milliseconds; one that
 * refuses is retried by the exporter, and one that accepts and never answers is waited on, each up to the export
 * timeout (OTEL_EXPORTER_OTLP_TIMEOUT, 10 s by default), which every run would otherwise pay at its end.
 */
export const SHUTDOWN_LIMIT_MS = 2_000;

const clean = (attributes: SpanAttributes | undefined) =>
  attributes && Object.fromEntries(Object.entries(attributes).filter(([, v]) => v !== undefined)) as Record<string, string | number | boolean>;

export async function startTelemetry(config: TelemetryConfig, logger: Logger, version: string): Promise<Telemetry> {
  const [api, { TracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { AsyncLocalStorageContextManager }, { resourceFromAttributes }] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/resources'),
  ]);
  for (const value of Object.values(config.headers)) globalSecrets.add(value);
  const shownUrl = hideCredentials(config.tracesUrl);
  const contextManager = new AsyncLocalStorageContextManager();
  contextManager.enable();
  api.context.setGlobalContextManager(contextManager);
  const exporter = new OTLPTraceExporter({ url: config.tracesUrl, headers: config.headers, timeoutMillis: config.timeoutMs });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ ...config.resource, 'service.name': config.serviceName, 'service.version': version }),
    spanProcessors: [new BatchSpanProcessor({ exporter, exportTimeoutMillis: config.timeoutMs })],
  });
  const otel = provider.getTracer('occupancy-sync', version);

  const handle = (span: ReturnType<typeof otel.startSpan>): SpanHandle => {
    const ctx = api.trace.setSpan(api.context.active(), span);
    return {
      setAttributes: (attributes) => void span.setAttributes(clean(attributes)!),
      addEvent: (name, attributes) => void span.addEvent(name, clean(attributes)),
      fail(error) {
        const message = globalSecrets.scrub(messageOf(error));
        span.recordException({ name: error instanceof Error ? error.name : 'Error', message });
        span.setStatus({ code: api.SpanStatusCode.ERROR, message });
      },
      end: () => span.end(),
      run: (fn) => api.context.with(ctx, fn),
    };
  };
  const tracer: Tracer = {
    start: (name, attributes) => handle(otel.startSpan(name, { attributes: clean(attributes) })),
    event(name, attributes) {
      api.trace.getActiveSpan()?.addEvent(name, clean(attributes));
    },
  };
  installTracer(tracer);
  logger.debug({ url: shownUrl, serviceName: config.serviceName }, 'OpenTelemetry tracing on');
  return {
    async shutdown() {
      installTracer(undefined);
      const limitMs = Math.min(SHUTDOWN_LIMIT_MS, config.timeoutMs);
      let timer: NodeJS.Timeout | undefined;
      try {
        const outcome = await Promise.race([
          provider.shutdown().then(() => 'sent' as const),
          new Promise<'limit'>((resolve) => {
            timer = setTimeout(() => resolve('limit'), limitMs);
          }),
        ]);
        if (outcome === 'limit') {
          logger.warn(
            { url: shownUrl, waitedMs: limitMs },
            `the last traces were not sent: the collector at ${shownUrl} did not take them within ${limitMs / 1000} s (down, or not ` +
              'answering); they are dropped so the command can end. Fix: check that the collector is up and reachable at OTEL_EXPORTER_OTLP_ENDPOINT',
          );
        }
      } catch (error) {
        logger.warn({ err: error, url: shownUrl }, `could not send the last traces to ${shownUrl}: ${(error as Error).message}`);
      } finally {
        clearTimeout(timer);
        contextManager.disable();
        api.context.disable();
      }
    },
  };
}

/**
 * Credentials in the endpoint's URL, hidden wherever they appear (an exporter's error may quote the URL); the URL as
 * messages show it. A user name with a password names an account and is shown, as redactUrl shows it; one alone may
 * be a token.
 */
function hideCredentials(url: string): string {
  const endpoint = new URL(url);
  for (const part of [endpoint.password === '' ? endpoint.username : '', endpoint.password]) {
    if (part === '') continue;
    globalSecrets.add(part);
    try {
      globalSecrets.add(decodeURIComponent(part));
    } catch {
      // Not percent-encoding (a lone '%'): hidden as written, above.
    }
  }
  return redactUrl(url);
}
