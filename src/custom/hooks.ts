import type { Hooks } from '../workers/hooks.js';

/**
 * YOUR CODE GOES HERE: how your service reacts to each event. This folder is yours; upstream
 * never edits it, so pulling upstream changes never conflicts with it. main.ts picks these up.
 * Leave out a hook you do not need. See the README's "Extending it" for a worked example.
 */
export const hooks: Partial<Hooks> = {
  // async audioReady(event, audio, { store, logger }) {
  //   await uploadToBucket(`tts/${audio.file}`, store.read(audio.file));
  //   logger.info({ id: audio.id }, 'uploaded');
  // },
  // async audioFailed(event) { await markFailed(event.data.id); },
  // async keyRevoked(event) { await rotateApiKey(event.data.id); },
};
