// What the example consumers share: they continue the trace each forward carries in its W3C
// `traceparent` (an HTTP header, a JetStream message header, an AMQP message header), so that
// one delivery can be followed from the provider's request to the consumer's work
// (docs/forwarding.md, "Trace context").
//
// The trace id is read from the header and printed whether or not traces are exported. With
// OTEL_EXPORTER_OTLP_ENDPOINT set (an OTLP/HTTP collector's base URL, as the service reads it),
// each message is also handled in a span of its own, a child of the forward's span, exported
// under the service's trace; unset, the OpenTelemetry SDK is never loaded.
import process from 'node:process';
import { propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';

// Version 00 as written: a header of another form is not trusted, and the message is handled
// outside any trace.
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;

/** The trace id a `traceparent` names, or '-' when it is missing or malformed. */
export function traceIdOf(traceparent) {
  const match = typeof traceparent === 'string' ? TRACEPARENT.exec(traceparent) : null;
  if (match === null || /^0+$/.test(match[1]) || /^0+$/.test(match[2])) return '-';
  return match[1];
}

/**
 * Starts exporting spans as `service` when OTEL_EXPORTER_OTLP_ENDPOINT is set. Returns
 * `consume(name, traceparent, handle)`, which runs `handle(traceId)` (in a consumer span when
 * exporting), and `shutdown()`, which exports what is buffered: call it before exiting.
 */
export async function startTracing(service) {
  const endpoint = process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint) {
    return {
      consume: async (_name, traceparent, handle) => handle(traceIdOf(traceparent)),
      shutdown: async () => {},
    };
  }
  const [
    { NodeTracerProvider, BatchSpanProcessor },
    { OTLPTraceExporter },
    { resourceFromAttributes },
  ] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
  ]);
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': service }),
    spanProcessors: [
      new BatchSpanProcessor(
        new OTLPTraceExporter({ url: `${endpoint.replace(/\/+$/, '')}/v1/traces` }),
      ),
    ],
  });
  // Registers the W3C trace-context propagator too, which reads the header below.
  provider.register();
  const tracer = trace.getTracer(service);
  return {
    async consume(name, traceparent, handle) {
      const traceId = traceIdOf(traceparent);
      const parent =
        traceId === '-' ? ROOT_CONTEXT : propagation.extract(ROOT_CONTEXT, { traceparent });
      return tracer.startActiveSpan(name, { kind: SpanKind.CONSUMER }, parent, async (span) => {
        try {
          return await handle(span.spanContext().traceId);
        } catch (error) {
          span.setStatus({ code: SpanStatusCode.ERROR, message: String(error) });
          throw error;
        } finally {
          span.end();
        }
      });
    },
    shutdown: () => provider.shutdown(),
  };
}
