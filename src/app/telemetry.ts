import { globalSecrets, type Logger } from '../logger.ts';
import type { TelemetryConfig } from '../telemetry-config.ts';
import { installTracer, type SpanAttributes, type SpanHandle, type Tracer } from '../tracing.ts';

/**
 * Starts OpenTelemetry tracing when the OTEL_* variables ask for it (src/telemetry-config.ts): a tracer provider
 * exporting in batches over OTLP/HTTP, context carried across awaits (AsyncLocalStorage), and the engine's tracer
 * (src/tracing.ts) pointed at it. The packages are loaded here, on demand: with tracing off none of them is.
 */
export interface Telemetry {
  /** Sends what is buffered and stops; bounded by the export timeout. */
  shutdown(): Promise<void>;
}

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
        const message = globalSecrets.scrub(error instanceof Error ? error.message : String(error));
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
  logger.debug({ url: config.tracesUrl, serviceName: config.serviceName }, 'OpenTelemetry tracing on');
  return {
    async shutdown() {
      installTracer(undefined);
      try {
        await provider.shutdown();
      } catch (error) {
        logger.warn({ err: error, url: config.tracesUrl }, `could not send the last traces to ${config.tracesUrl}: ${(error as Error).message}`);
      } finally {
        contextManager.disable();
        api.context.disable();
      }
    },
  };
}
