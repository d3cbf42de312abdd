import type { AudioFailedEvent } from '../../webhooks/events.js';
import type { JobInfo, WorkerContext } from '../worker-context.js';

/** Records the provider's failure where `audio-webhooks failures` lists it, then runs the hook. */
export async function handleAudioFailed(
  event: AudioFailedEvent,
  context: WorkerContext,
  job: JobInfo,
): Promise<{ recorded: boolean }> {
  const recorded = await context.failures.record(event, job.receivedAt);
  context.logger.error(
    { id: event.data.id, payload: event.data, jobId: job.id },
    'provider reports a failed audio job',
  );
  await context.hooks.audioFailed(event, context);
  return { recorded };
}
