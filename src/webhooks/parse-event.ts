import { BadRequestError } from '../http/http-errors.js';
import { isKnownEvent, webhookEventSchema, type WebhookEvent } from './events.js';

export type ParsedDelivery =
  | { readonly known: true; readonly event: WebhookEvent }
  | { readonly known: false; readonly event: string; readonly id: string };

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Parses a verified body. The envelope (`event`, `data`, `data.id`) is required of every event,
 * known or not; a known event is then checked against its schema. Throws BadRequestError.
 */
export function parseEvent(body: Uint8Array): ParsedDelivery {
  let json: unknown;
  try {
    json = JSON.parse(utf8.decode(body));
  } catch {
    throw new BadRequestError('body is not valid UTF-8 JSON');
  }
  if (!isObject(json)) throw new BadRequestError('body must be a JSON object');
  const { event, data } = json;
  if (typeof event !== 'string' || event === '') {
    throw new BadRequestError('event must be a non-empty string');
  }
  if (!isObject(data)) throw new BadRequestError('data must be an object');
  if (typeof data.id !== 'string' || data.id === '') {
    throw new BadRequestError('data.id must be a non-empty string');
  }
  if (!isKnownEvent(event)) return { known: false, event, id: data.id };

  const result = webhookEventSchema.safeParse(json);
  if (!result.success) {
    const problems = result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new BadRequestError(`invalid ${event} delivery: ${problems.join('; ')}`);
  }
  return { known: true, event: result.data };
}
