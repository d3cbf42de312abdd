import { z } from 'zod';

/**
 * The provider's events (docs/provider.md, "The events"). Objects are loose: fields the provider
 * does not show are kept and passed on, never rejected, so a provider that adds a field does not
 * break deliveries. A fork's own events are declared in src/custom/events.ts (defineEvent), not
 * here; a new event of the provider's goes in `webhookEventSchema`, and the compiler then points
 * at the dispatcher (src/worker/dispatch.ts) until a handler exists.
 */
const id = z.string().min(1);

const httpsUrl = z.string().refine((value) => {
  try {
    const url = new URL(value);
    return url.protocol === 'https:' && url.username === '' && url.password === '';
  } catch {
    return false;
  }
}, 'must be an https URL without credentials');

export const audioReadySchema = z.looseObject({
  event: z.literal('audio.ready'),
  data: z.looseObject({
    id,
    /** `tts` is the only value the spec shows; others are accepted, not guessed at. */
    kind: z.string().min(1),
    audio_url: httpsUrl,
    voice: z.string().min(1),
    /** ISO 8601 in UTC: the `Z` form, fractional seconds allowed. */
    created_at: z.iso.datetime({ error: 'must be an ISO 8601 UTC timestamp' }),
  }),
});

/** The spec does not show the data of `audio.failed`: only the id is required. */
export const audioFailedSchema = z.looseObject({
  event: z.literal('audio.failed'),
  data: z.looseObject({ id }),
});

/** `data.id` is the revoked API key's identifier; the rest is not shown by the spec. */
export const keyRevokedSchema = z.looseObject({
  event: z.literal('key.revoked'),
  data: z.looseObject({ id }),
});

export const webhookEventSchema = z.discriminatedUnion('event', [
  audioReadySchema,
  audioFailedSchema,
  keyRevokedSchema,
]);

export type WebhookEvent = z.infer<typeof webhookEventSchema>;
export type EventName = WebhookEvent['event'];
export type EventOf<N extends EventName> = Extract<WebhookEvent, { event: N }>;
export type AudioReadyEvent = EventOf<'audio.ready'>;
export type AudioFailedEvent = EventOf<'audio.failed'>;
export type KeyRevokedEvent = EventOf<'key.revoked'>;

export const EVENT_NAMES: readonly EventName[] = webhookEventSchema.options.map(
  (option) => option.shape.event.value,
);

export function isKnownEvent(name: string): name is EventName {
  return (EVENT_NAMES as readonly string[]).includes(name);
}
