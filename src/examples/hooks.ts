import type { Hooks } from '../index.js';

/**
 * An example of src/custom/hooks.ts: copy this file there and change it (upstream edits this
 * folder, never src/custom/). Each hook runs in a worker after the built-in handling of its
 * event, and again if the job is retried: keep them idempotent. Leave out those you do not need.
 */
export const hooks: Partial<Hooks> = {
  async audioReady(event, audio, { store, logger, delivery }) {
    // Read back from the store, as an upload to your own bucket or a transcoder would.
    let bytes = 0;
    for await (const chunk of store.read(audio.file)) bytes += chunk.length;
    // `replay`: an operator ran `audio-webhooks replay`; skip what must not happen twice (mail).
    logger.info(
      { file: audio.file, bytes, voice: event.data.voice, replay: delivery.replay },
      'audio ready for the app',
    );
  },
  keyRevoked(event, { logger }) {
    logger.warn({ keyId: event.data.id }, 'rotate this key in the secrets manager');
    return Promise.resolve();
  },
};
