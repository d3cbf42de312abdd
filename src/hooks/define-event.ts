import type { z } from 'zod';
import type { EventDataSchema } from '../provider-spec/delivery.js';
import type { HookContext } from './hook-context.js';

/** One event of the fork's own (src/custom/events.ts), made by `defineEvent`. */
export interface EventDefinition<
  Name extends string = string,
  Data extends EventDataSchema = EventDataSchema,
> {
  /** The delivery's `event`; never a built-in event's name (checked at start-up). */
  readonly name: Name;
  /** The delivery's `data`: the receiver answers 400 with the first problems when it fails. */
  readonly data: Data;
  /**
   * Runs in a worker once per accepted delivery, after the receiver acknowledged it; a throw
   * fails the job, which is retried like a built-in handler's. Written as a method so a
   * definition of a particular event is still an `EventDefinition` (method parameters are
   * bivariant).
   */
  handle(
    event: { readonly event: Name; readonly data: z.output<Data> },
    context: HookContext,
  ): Promise<void>;
}

const DEFINED = Symbol.for('audio-webhooks.defineEvent');

/**
 * Declares an event of your own:
 *
 *   export const events = [
 *     defineEvent({
 *       name: 'voice.converted',
 *       data: z.object({ id: z.string().min(1), audio_url: z.string(), voice: z.string() }),
 *       async handle(event, { downloadAudio }) {
 *         await downloadAudio(event.data.audio_url, { id: event.data.id });
 *       },
 *     }),
 *   ];
 */
export function defineEvent<const Name extends string, Data extends EventDataSchema>(
  definition: EventDefinition<Name, Data>,
): EventDefinition<Name, Data> {
  return Object.freeze({ ...definition, [DEFINED]: true });
}

/** True for what `defineEvent` made (a plain object of the same shape is refused at start-up). */
export function isDefinedEvent(value: unknown): value is EventDefinition {
  return typeof value === 'object' && value !== null && DEFINED in value;
}
