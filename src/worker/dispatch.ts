import { NeverRetryError } from '../jobs/retry-policy.js';
import { inSpan } from '../telemetry/tracing.js';
import type { Delivery } from '../provider-spec/delivery.js';
import { isKnownEvent, webhookEventSchema, type WebhookEvent } from '../provider-spec/events.js';
import { handleAudioFailed } from './handlers/audio-failed.js';
import { handleAudioReady } from './handlers/audio-ready.js';
import { handleKeyRevoked } from './handlers/key-revoked.js';
import type { AudioMetadata } from '../storage/audio-store.js';
import type { DeliveryInfo } from '../hooks/hook-context.js';
import type { Hooks } from '../hooks/hooks.js';
import type { HookContext } from '../hooks/hook-context.js';
import type { WorkerContext } from './worker-context.js';

/**
 * A job's delivery and the facts of the job itself: the delivery's one view, built once
 * (deliveryView) and read by every stage; hooks and handlers get it as their DeliveryInfo.
 */
export type DeliveryJob = DeliveryInfo & { readonly delivery: Delivery };

/** The facts of a job that its delivery's view is built from (run-delivery.ts reads them). */
export type JobFacts = Omit<DeliveryInfo, 'event' | 'id' | 'dataText'> & {
  readonly dataText: string | undefined;
};

/**
 * The delivery's view. Jobs normally come from our receiver, but a queue is an open door: one
 * whose `data.id` is not a string can never be handled, and fails at once instead of retrying.
 */
export function deliveryView(delivery: Delivery, facts: JobFacts): DeliveryJob {
  const id: unknown = (delivery as { readonly data?: { readonly id?: unknown } }).data?.id;
  if (typeof id !== 'string') throw invalid(delivery.event, 'data.id is not a string');
  const { dataText, ...rest } = facts;
  return {
    delivery,
    event: delivery.event,
    id,
    ...rest,
    ...(dataText === undefined ? {} : { dataText }),
  };
}

/** What a handled delivery gave: its handler's result, and the item it stored (the last, if several). */
export interface Handled {
  readonly result: unknown;
  /** The stored item's metadata, for forwarding's `stored`; undefined when it stored none. */
  readonly stored: AudioMetadata | undefined;
}

/**
 * Runs one job: a built-in event by its handler, a custom one by its `handle`, each checking
 * the delivery against its schema again (a queue is an open door): one that can never be
 * handled fails at once instead of being retried.
 */
export async function dispatch(job: DeliveryJob, context: WorkerContext): Promise<Handled> {
  const { delivery, ...info } = job;
  const handling = context.forDelivery(info);
  const result = await run(delivery, handling.context, context);
  return { result, stored: handling.stored() };
}

function run(delivery: Delivery, hookContext: HookContext, context: WorkerContext) {
  // The handler's own span: BullMQ's `process` span around it also holds its Redis calls.
  return inSpan('webhook.handle', { 'webhook.event': delivery.event }, async () => {
    if (isKnownEvent(delivery.event)) {
      const parsed = webhookEventSchema.safeParse(delivery);
      if (!parsed.success) throw invalid(delivery.event, parsed.error.message);
      return handleBuiltIn(parsed.data, hookContext, context.hooks);
    }
    const custom = context.customEvents.get(delivery.event);
    if (custom === undefined) {
      throw new NeverRetryError(
        `no handler for event ${JSON.stringify(delivery.event)} in this worker (is its src/custom/events.ts the receiver's?)`,
      );
    }
    const parsed = custom.data.safeParse(delivery.data);
    if (!parsed.success) throw invalid(delivery.event, parsed.error.message);
    return custom.handle({ event: delivery.event, data: parsed.data }, hookContext);
  });
}

function invalid(event: string, problems: string): NeverRetryError {
  return new NeverRetryError(`job data is not a valid ${event} delivery: ${problems}`);
}

/**
 * One handler per built-in event. The switch is exhaustive: add an event to
 * `webhookEventSchema` and this file stops compiling until the new case is handled.
 */
function handleBuiltIn(event: WebhookEvent, context: HookContext, hooks: Hooks): Promise<unknown> {
  switch (event.event) {
    case 'audio.ready':
      return handleAudioReady(event, context, hooks);
    case 'audio.failed':
      return handleAudioFailed(event, context, hooks);
    case 'key.revoked':
      return handleKeyRevoked(event, context, hooks);
    default:
      return assertNever(event);
  }
}

function assertNever(event: never): never {
  throw new Error(`no handler for event ${JSON.stringify(event)}`);
}
