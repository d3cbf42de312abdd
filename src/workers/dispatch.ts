import { inSpan } from '../telemetry/tracing.js';
import type { WebhookEvent } from '../webhooks/events.js';
import { handleAudioFailed } from './handlers/audio-failed.js';
import { handleAudioReady } from './handlers/audio-ready.js';
import { handleKeyRevoked } from './handlers/key-revoked.js';
import type { JobInfo, WorkerContext } from './worker-context.js';

/**
 * One handler per event. The switch is exhaustive: add an event to `webhookEventSchema` and this
 * file stops compiling until the new case is handled.
 */
export function dispatch(
  event: WebhookEvent,
  context: WorkerContext,
  job: JobInfo,
): Promise<unknown> {
  // The handler's own span: BullMQ's `process` span around it also holds its Redis calls.
  return inSpan('webhook.handle', { 'webhook.event': event.event }, () =>
    handle(event, context, job),
  );
}

async function handle(event: WebhookEvent, context: WorkerContext, job: JobInfo): Promise<unknown> {
  switch (event.event) {
    case 'audio.ready':
      return handleAudioReady(event, context, job);
    case 'audio.failed':
      return handleAudioFailed(event, context, job);
    case 'key.revoked':
      return handleKeyRevoked(event, context, job);
    default:
      return assertNever(event);
  }
}

function assertNever(event: never): never {
  throw new Error(`no handler for event ${JSON.stringify(event)}`);
}
