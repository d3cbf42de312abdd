import type { AudioFailedEvent } from '../../webhooks/events.js';
import type { Hooks } from '../../hooks/hooks.js';
import type { HookContext } from '../../hooks/hook-context.js';

/** Records the provider's failure where `audio-webhooks failures` lists it, then runs the hook. */
export async function handleAudioFailed(
  event: AudioFailedEvent,
  context: HookContext,
  hooks: Hooks,
): Promise<{ recorded: boolean }> {
  const recorded = await context.failures.record(event, context.delivery.receivedAt);
  context.logger.error({ payload: event.data }, 'provider reports a failed audio job');
  await hooks.audioFailed(event, context);
  return { recorded };
}
