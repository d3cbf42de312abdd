import { z } from 'zod';
import { defineEvent } from '../index.js';

/**
 * An example of src/custom/events.ts: an event of your own, `voice.converted`, whose audio is
 * downloaded like `audio.ready`'s. Copy this file to src/custom/events.ts to receive it.
 *
 * The receiver answers a delivery whose `data` fails the schema with 400 and its problems, and
 * deduplicates on `event` + `data.id` like a built-in event; the worker runs `handle` once per
 * accepted delivery and retries it when it throws.
 */
export const events = [
  defineEvent({
    name: 'voice.converted',
    data: z.looseObject({
      id: z.string().min(1),
      audio_url: z.url({ protocol: /^https$/ }),
      voice: z.string().min(1),
    }),
    async handle(event, { downloadAudio, logger }) {
      const audio = await downloadAudio(event.data.audio_url, {
        id: event.data.id,
        details: { voice: event.data.voice },
      });
      logger.info({ file: audio.file, voice: audio.voice }, 'converted voice stored');
    },
  }),
];
