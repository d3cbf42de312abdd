import type { AudioMetadata } from '../../storage/audio-store.js';
import type { AudioReadyEvent } from '../../webhooks/events.js';
import type { Hooks } from '../../hooks/hooks.js';
import type { HookContext } from '../../hooks/hook-context.js';

/**
 * Downloads the audio into the store (`<id><ext>` and `<id>.json`, see download-audio.ts), then
 * runs the hook. Hooks run on a re-run too: the run that downloaded may have died before its
 * hook finished.
 */
export async function handleAudioReady(
  event: AudioReadyEvent,
  context: HookContext,
  hooks: Hooks,
): Promise<AudioMetadata> {
  const { id, kind, voice, created_at } = event.data;
  const audio = await context.downloadAudio(event.data.audio_url, {
    id,
    details: { kind, voice, created_at },
  });
  await hooks.audioReady(event, audio, context);
  return audio;
}
