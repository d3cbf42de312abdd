import type { KeyRevokedEvent } from '../../provider-spec/events.js';
import type { Hooks } from '../../hooks/hooks.js';
import type { HookContext } from '../../hooks/hook-context.js';

/** Adds the key to the revocation registry (isKeyRevoked, `audio-webhooks revoked-keys`), then the hook. */
export async function handleKeyRevoked(
  event: KeyRevokedEvent,
  context: HookContext,
  hooks: Hooks,
): Promise<{ recorded: boolean }> {
  const { receivedAt, dataText } = context.delivery;
  const recorded = await context.revocations.record(event, receivedAt, dataText);
  context.logger.warn({ keyId: event.data.id }, 'API key revoked');
  await hooks.keyRevoked(event, context);
  return { recorded };
}
