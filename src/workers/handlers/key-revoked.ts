import type { KeyRevokedEvent } from '../../webhooks/events.js';
import type { HookContext, Hooks } from '../hooks.js';

/** Adds the key to the revocation registry (isKeyRevoked, `audio-webhooks revoked-keys`), then the hook. */
export async function handleKeyRevoked(
  event: KeyRevokedEvent,
  context: HookContext,
  hooks: Hooks,
): Promise<{ recorded: boolean }> {
  const recorded = await context.revocations.record(event, context.delivery.receivedAt);
  context.logger.warn({ keyId: event.data.id }, 'API key revoked');
  await hooks.keyRevoked(event, context);
  return { recorded };
}
