import { randomBytes } from 'node:crypto';

/**
 * A delivery's W3C trace context (https://www.w3.org/TR/trace-context/), which every forward
 * carries as `traceparent` whether or not traces are exported: the provider's when its request
 * came with a valid one, else one the receiver starts. It travels in the delivery's job as the
 * header's own 55 characters, so the worker and the forward jobs send the same trace id.
 */
export interface TraceContext {
  /** 32 lower-case hex digits, not all zero. */
  readonly traceId: string;
  /** The parent's span id: 16 lower-case hex digits, not all zero. */
  readonly spanId: string;
  /** Two hex digits; `01` is "sampled". */
  readonly flags: string;
}

/**
 * Version 00 exactly as the recommendation writes it: lower-case hex, fixed lengths, nothing
 * after the flags. A later version may append fields, but a version this receiver does not
 * know is not trusted to mean what 00 means.
 */
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ZEROS = /^0+$/;

/**
 * The context an incoming `traceparent` header names, or undefined when it is absent, repeated
 * (two headers are ambiguous) or malformed in any way: a malformed one is ignored, and the
 * delivery gets a trace of its own.
 */
export function parseTraceparent(
  header: string | readonly string[] | undefined,
): TraceContext | undefined {
  if (typeof header !== 'string') return undefined;
  const match = TRACEPARENT.exec(header);
  if (match === null) return undefined;
  const [, traceId = '', spanId = '', flags = ''] = match;
  if (ZEROS.test(traceId) || ZEROS.test(spanId)) return undefined;
  return { traceId, spanId, flags };
}

export function formatTraceparent({ traceId, spanId, flags }: TraceContext): string {
  return `00-${traceId}-${spanId}-${flags}`;
}

/**
 * Random bytes drawn a pool at a time: a call to the system's generator per id cost the receiver
 * more than any other step a delivery adds to an empty route (docs/performance-history.md, the
 * receiver's profile). Trace and span ids are not secrets; each process draws its own pool.
 */
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let used = 0;

/** Random hex of `bytes` bytes, never all zero (which W3C reserves for "invalid"). */
function randomHex(bytes: number): string {
  for (;;) {
    if (used + bytes > pool.length) {
      pool = randomBytes(POOL_BYTES);
      used = 0;
    }
    const hex = pool.toString('hex', used, used + bytes);
    used += bytes;
    if (!ZEROS.test(hex)) return hex;
  }
}

export const newSpanId = () => randomHex(8);

/** A trace of the receiver's own, sampled: for a delivery that came without a valid one. */
export function newTraceContext(): TraceContext {
  return { traceId: randomHex(16), spanId: newSpanId(), flags: '01' };
}

/** The same trace, under a span of this process's own that no exporter knows of. */
export function childOf(parent: TraceContext): TraceContext {
  return { ...parent, spanId: newSpanId() };
}
