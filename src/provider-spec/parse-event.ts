import type { Delivery, EventDataSchema } from './delivery.js';
import { isKnownEvent, webhookEventSchema } from './events.js';

/** A verified body, parsed; `ok: false` carries the reason a 400 gives the sender. */
export type ParsedDelivery =
  | {
      readonly ok: true;
      readonly known: true;
      readonly event: Delivery;
      /** The body's text, as sent: what the queue keeps. */
      readonly text: string;
    }
  | { readonly ok: true; readonly known: false; readonly event: string; readonly id: string }
  | { readonly ok: false; readonly detail: string };

/**
 * The receiver's view of the fork's events: each one's `data` schema, by name. The worker's
 * view (hooks/custom-events.ts) has each one's `handle` too; a map of that is one of these.
 */
export type EventSchemas = ReadonlyMap<string, { readonly data: EventDataSchema }>;

const NO_EVENTS: EventSchemas = new Map();

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/**
 * A lone UTF-16 surrogate (`"a\ud800"` is valid JSON): encoding it for a file name or a log
 * turns it into U+FFFD, so two different ids would become one name.
 */
const LONE_SURROGATE = /\p{Cs}/u;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const refuse = (detail: string): ParsedDelivery => ({ ok: false, detail });

/**
 * Parses a verified body. The envelope (`event`, `data`, `data.id`) is required of every event,
 * known or not; a known event (built in, or one of `custom`) is then checked against its schema.
 * What is returned is the delivery as the provider sent it, never the schema's output: a schema
 * may transform (`z.string().transform(Number)`), and the queue and the archive keep what was
 * sent, so the worker's parse (worker/dispatch.ts) is the one that runs, on replays too.
 * Pure: the route maps a refusal to 400.
 */
export function parseEvent(body: Uint8Array, custom: EventSchemas = NO_EVENTS): ParsedDelivery {
  let json: unknown;
  let text: string;
  try {
    text = utf8.decode(body);
    // V8's JSON.parse is iterative: any depth parses without overflowing the stack.
    json = JSON.parse(text);
  } catch {
    return refuse('body is not valid UTF-8 JSON');
  }
  if (!isObject(json)) return refuse('body must be a JSON object');
  const { event, data } = json;
  if (typeof event !== 'string' || event === '') return refuse('event must be a non-empty string');
  if (!isObject(data)) return refuse('data must be an object');
  if (typeof data.id !== 'string' || data.id === '') {
    return refuse('data.id must be a non-empty string');
  }
  if (LONE_SURROGATE.test(data.id)) {
    return refuse('data.id must be well-formed Unicode (it holds a lone UTF-16 surrogate)');
  }
  // An unknown event is acknowledged and dropped, never stored: the depth bound, which protects
  // the queue's serialiser, is no reason to make the sender retry it for 8.5 hours.
  const definition = custom.get(event);
  if (!isKnownEvent(event) && definition === undefined) {
    return { ok: true, known: false, event, id: data.id };
  }
  if (exceedsJsonDepth(body)) {
    return refuse(`body nests deeper than ${MAX_JSON_DEPTH} levels; it cannot be stored as sent`);
  }
  if (definition !== undefined) {
    const result = definition.data.safeParse(data);
    if (!result.success) return refuse(invalid(event, result.error.issues, ['data']));
  } else {
    const result = webhookEventSchema.safeParse(json);
    if (!result.success) return refuse(invalid(event, result.error.issues));
  }
  // The envelope checks above proved `event` and `data.id` non-empty strings.
  return { ok: true, known: true, event: json as unknown as Delivery, text };
}

function invalid(
  event: string,
  issues: readonly { readonly path: readonly PropertyKey[]; readonly message: string }[],
  under: readonly string[] = [],
): string {
  const problems = issues.map(
    (i) => `${[...under, ...i.path.map(String)].join('.')}: ${i.message}`,
  );
  return `invalid ${event} delivery: ${problems.join('; ')}`;
}

/**
 * The deepest nesting a delivery may have. The provider's bodies are two levels deep; BullMQ's
 * serialisation recurses and overflows the stack at a few thousand levels, which used to surface
 * as a 503 on every attempt (the provider then retries for 8.5 hours for nothing). 32 leaves room
 * for any extra fields a provider adds, and refuses a hostile body before anything parses it.
 */
export const MAX_JSON_DEPTH = 32;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;

/**
 * True when the JSON text nests arrays and objects deeper than `max`. One pass over the bytes,
 * no recursion and no allocation, so it is safe on any input; brackets inside strings do not
 * count. Malformed JSON is JSON.parse's to refuse, not this function's.
 */
export function exceedsJsonDepth(bytes: Uint8Array, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i];
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) inString = true;
    else if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) {
      if (++depth > max) return true;
    } else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) depth--;
  }
  return false;
}
