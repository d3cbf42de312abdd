import { ENTRY_MAX_BYTES } from '../../history/entry-codec.js';
import type { AudioFailedEvent } from '../../provider-spec/events.js';
import type { Hooks } from '../../hooks/hooks.js';
import type { HookContext } from '../../hooks/hook-context.js';

/**
 * Logs the provider's failure where `audio-webhooks failures` lists it (its `data` as the
 * provider wrote it, when short: entry-codec.ts), then runs the hook.
 */
export async function handleAudioFailed(
  event: AudioFailedEvent,
  context: HookContext,
  hooks: Hooks,
): Promise<{ recorded: boolean }> {
  const { receivedAt, dataText } = context.delivery;
  const recorded = await context.failures.record(event, receivedAt, dataText);
  // The line is bounded as the entry is: a `data` of megabytes is counted, not logged.
  const text = dataText ?? JSON.stringify(event.data);
  context.logger.error(
    text.length <= ENTRY_MAX_BYTES
      ? { payload: event.data }
      : { payload_bytes: Buffer.byteLength(text) },
    'provider reports a failed audio job',
  );
  await hooks.audioFailed(event, context);
  return { recorded };
}
