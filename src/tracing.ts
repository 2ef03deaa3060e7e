/**
 * Traces, as the code sees them: spans around a run, a stream, a window, an API request and a commit, and events on
 * them (a retry, a token refresh). A no-op until the application installs OpenTelemetry (src/app/telemetry.ts, when
 * the standard OTEL_* variables ask for it), so with tracing off no tracing package is loaded and a span costs one
 * call. This module imports nothing of OpenTelemetry, and the one-shot commands load none of it; prom-client requires
 * `@opentelemetry/api` (the interface only), so `serve` and a run with METRICS_TEXTFILE load that one package
 * (docs/operations.md, "Traces: OpenTelemetry").
 */

export type SpanAttributes = Record<string, string | number | boolean | undefined>;

export interface SpanHandle {
  setAttributes(attributes: SpanAttributes): void;
  addEvent(name: string, attributes?: SpanAttributes): void;
  /** Marks the span failed, with the error (its message is scrubbed of secrets by the caller's logger rules). */
  fail(error: unknown): void;
  end(): void;
  /** Runs `fn` with this span as the parent of the spans it starts. */
  run<T>(fn: () => T): T;
}

export interface Tracer {
  /** Starts a span, a child of the span active where it is called. */
  start(name: string, attributes?: SpanAttributes): SpanHandle;
  /** An event on the span active where it is called, if any. */
  event(name: string, attributes?: SpanAttributes): void;
}

const NOOP_SPAN: SpanHandle = {
  setAttributes() {},
  addEvent() {},
  fail() {},
  end() {},
  run: (fn) => fn(),
};

const NOOP: Tracer = { start: () => NOOP_SPAN, event() {} };

let current: Tracer = NOOP;

/** The tracer in force (the no-op one unless telemetry was started). */
export function tracer(): Tracer {
  return current;
}

/** Installs a tracer (src/app/telemetry.ts); `undefined` goes back to the no-op one. */
export function installTracer(next: Tracer | undefined): void {
  current = next ?? NOOP;
}

/** Runs `fn` inside a span that ends when it settles, failed if it throws. */
export async function inSpan<T>(name: string, attributes: SpanAttributes, fn: (span: SpanHandle) => Promise<T>): Promise<T> {
  const span = current.start(name, attributes);
  try {
    return await span.run(() => fn(span));
  } catch (error) {
    span.fail(error);
    throw error;
  } finally {
    span.end();
  }
}
