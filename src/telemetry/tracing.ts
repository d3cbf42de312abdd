import {
  context,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Span,
} from '@opentelemetry/api';
import type { Telemetry } from 'bullmq';

/**
 * One trace per delivery: the HTTP request, the signature check, the enqueue (BullMQ's own spans
 * via bullmq-otel, which carry the context into the job), the worker's job, the download and the
 * file writes. Off unless OTEL_EXPORTER_OTLP_ENDPOINT is set; when off, the SDK is never loaded
 * and inSpan() calls its function directly: no span objects, no context switches.
 */
const TRACER = 'audio-webhooks';
let enabled = false;

export interface Tracing {
  /** BullMQ's telemetry for Queue and Worker options. */
  readonly telemetry: Telemetry;
  /** Exports what is buffered and stops: the last step of shutdown. */
  shutdown(): Promise<void>;
}

/** Registers the OpenTelemetry SDK (OTLP/HTTP exporter, batched) for this process. */
export async function startTracing(
  endpoint: string,
  attributes: { role: string; version: string },
): Promise<Tracing> {
  // Loaded only here, so a service without tracing pays nothing for the SDK.
  const [{ NodeTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, resources, otel] =
    await Promise.all([
      import('@opentelemetry/sdk-trace-node'),
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/resources'),
      import('bullmq-otel'),
    ]);
  const provider = new NodeTracerProvider({
    resource: resources.resourceFromAttributes({
      'service.name': TRACER,
      'service.version': attributes.version,
      'service.instance.id': `${attributes.role}-${String(process.pid)}`,
      'audio_webhooks.role': attributes.role,
    }),
    spanProcessors: [
      new BatchSpanProcessor(
        new OTLPTraceExporter({ url: `${endpoint.replace(/\/+$/, '')}/v1/traces` }),
      ),
    ],
  });
  // Async-local context and the W3C traceparent propagator, which bullmq-otel uses.
  provider.register();
  enabled = true;
  return {
    telemetry: new otel.BullMQOtel({ tracerName: TRACER, version: attributes.version }),
    async shutdown() {
      enabled = false;
      await provider.shutdown();
    },
  };
}

/** Runs `fn` in a span (a child of the active one), recording a thrown error on it. */
export async function inSpan<T>(
  name: string,
  attributes: Attributes,
  fn: (span: Span | undefined) => Promise<T>,
  kind: SpanKind = SpanKind.INTERNAL,
): Promise<T> {
  if (!enabled) return fn(undefined);
  return trace.getTracer(TRACER).startActiveSpan(name, { kind, attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (error: unknown) {
      span.recordException(error instanceof Error ? error : String(error));
      span.setStatus({ code: SpanStatusCode.ERROR, message: String(error) });
      throw error;
    } finally {
      span.end();
    }
  });
}

/** inSpan for synchronous work (the signature check). */
export function inSpanSync<T>(name: string, attributes: Attributes, fn: () => T): T {
  if (!enabled) return fn();
  const span = trace.getTracer(TRACER).startSpan(name, { attributes });
  try {
    return context.with(trace.setSpan(context.active(), span), fn);
  } finally {
    span.end();
  }
}

/** The incoming request's server span; a sender's `traceparent` is not trusted as a parent. */
export function inServerSpan<T>(
  name: string,
  attributes: Attributes,
  fn: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  if (!enabled) return fn(undefined);
  // A new root: the provider's trace ids are not ours to join, nor to be chosen by a caller.
  return context.with(ROOT_CONTEXT, () => inSpan(name, attributes, fn, SpanKind.SERVER));
}
