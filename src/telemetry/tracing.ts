import {
  context,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';
import type { Telemetry } from 'bullmq';
import { childOf, newTraceContext, type TraceContext } from './trace-context.js';

/**
 * One trace per delivery: the HTTP request, the signature check, the enqueue (BullMQ's own spans
 * via bullmq-otel, which carry the context into the job), the worker's job, the download and the
 * file writes, each forward's send. Off unless OTEL_EXPORTER_OTLP_ENDPOINT is set; when off, the
 * SDK is never loaded and inSpan() calls its function directly: no span objects, no context
 * switches. The trace's id is the delivery's either way (trace-context.ts): the functions that
 * take a TraceContext give the same trace id on and off, so a forward's `traceparent` does not
 * depend on whether traces are exported.
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

/**
 * The incoming request's server span, in the provider's trace when its request carried a valid
 * `traceparent` (`incoming`), else in a new one; `fn` is given the context the delivery's job
 * carries on: the server span's, or (tracing off) one that stands for it.
 */
export function inServerSpan<T>(
  name: string,
  attributes: Attributes,
  incoming: TraceContext | undefined,
  fn: (span: Span | undefined, trace: TraceContext) => Promise<T>,
): Promise<T> {
  if (!enabled)
    return fn(undefined, incoming === undefined ? newTraceContext() : childOf(incoming));
  // Never the active context: a request's trace is the provider's or its own, not a caller's.
  const parent = incoming === undefined ? ROOT_CONTEXT : withRemote(ROOT_CONTEXT, incoming);
  return context.with(parent, () =>
    inSpan(name, attributes, (span) => fn(span, contextOf(span)), SpanKind.SERVER),
  );
}

/**
 * Runs `fn` in a span of the trace `delivery` names (a child of the active span when that is in
 * the same trace, as bullmq-otel's job spans are); `fn` is given the context to send on: the
 * span's, or (tracing off) the same trace under a span id of its own.
 */
export async function inTraceSpan<T>(
  name: string,
  attributes: Attributes,
  delivery: TraceContext,
  fn: (trace: TraceContext) => Promise<T>,
  kind: SpanKind = SpanKind.PRODUCER,
): Promise<T> {
  if (!enabled) return fn(childOf(delivery));
  const active = trace.getSpan(context.active())?.spanContext();
  const parent =
    active?.traceId === delivery.traceId
      ? context.active()
      : withRemote(context.active(), delivery);
  return context.with(parent, () =>
    inSpan(
      name,
      attributes,
      (span) => fn(span === undefined ? childOf(delivery) : contextOf(span)),
      kind,
    ),
  );
}

/** The active span's trace, when tracing is on and a span is active (a job's, via bullmq-otel). */
export function activeTrace(): TraceContext | undefined {
  if (!enabled) return undefined;
  const span = trace.getSpan(context.active());
  return span === undefined || !trace.isSpanContextValid(span.spanContext())
    ? undefined
    : contextOf(span);
}

function contextOf(span: Span | undefined): TraceContext {
  if (span === undefined) return newTraceContext();
  const { traceId, spanId, traceFlags } = span.spanContext();
  return { traceId, spanId, flags: traceFlags.toString(16).padStart(2, '0') };
}

function withRemote(parent: Context, { traceId, spanId, flags }: TraceContext): Context {
  return trace.setSpanContext(parent, {
    traceId,
    spanId,
    traceFlags: Number.parseInt(flags, 16),
    isRemote: true,
  });
}
