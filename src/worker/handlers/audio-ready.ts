import type { AudioReadyEvent } from '../../provider-spec/events.js';
import type { Hooks } from '../../hooks/hooks.js';
import type { HookContext } from '../../hooks/hook-context.js';

/**
 * What the completed job keeps of a handled `audio.ready` (the dashboard shows it): the stored
 * file and its bytes. Not the whole metadata, which is in the store's `<id>.json`: it holds the
 * id and the URLs, as long as the body may be, and a handled delivery leaves at most 2 KB in
 * Redis (docs/capacity.md).
 */
export interface AudioReadyResult {
  /** The audio file's name in the store (`<id><ext>`, encoded when the id is unsafe or long). */
  readonly file: string;
  readonly bytes: number;
  readonly sha256: string;
}

/**
 * Downloads the audio into the store (`<id><ext>` and `<id>.json`, see download-audio.ts), then
 * runs the hook. Hooks run on a re-run too: the run that downloaded may have died before its
 * hook finished.
 */
export async function handleAudioReady(
  event: AudioReadyEvent,
  context: HookContext,
  hooks: Hooks,
): Promise<AudioReadyResult> {
  const { id, kind, voice, created_at } = event.data;
  const audio = await context.downloadAudio(event.data.audio_url, {
    id,
    details: { kind, voice, created_at },
  });
  await hooks.audioReady(event, audio, context);
  return { file: audio.file, bytes: audio.bytes, sha256: audio.sha256 };
}
