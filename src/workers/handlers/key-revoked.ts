import type { KeyRevokedEvent } from '../../webhooks/events.js';
import type { JobInfo, WorkerContext } from '../worker-context.js';

/** Adds the key to the revocation registry (isKeyRevoked, `audio-webhooks revoked-keys`), then the hook. */
export async function handleKeyRevoked(
  event: KeyRevokedEvent,
  context: WorkerContext,
  job: JobInfo,
): Promise<{ recorded: boolean }> {
  const recorded = await context.revocations.record(event, job.receivedAt);
  context.logger.warn({ keyId: event.data.id, jobId: job.id }, 'API key revoked');
  await context.hooks.keyRevoked(event, context);
  return { recorded };
}
