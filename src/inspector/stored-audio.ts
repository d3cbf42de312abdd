import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Response } from 'express';
import type { AudioStore } from '../storage/audio-store.js';
import { HttpError } from '../http-server/http-errors.js';

/** What handling stored, as a delivery's `stored` names it (worker/timeline-steps.ts). */
export interface StoredItem {
  readonly key: string;
  readonly bytes: number;
  readonly content_type: string;
}

/** The stored item a detail's `stored` names; undefined when it names none. */
export function storedItemOf(stored: unknown): StoredItem | undefined {
  if (typeof stored !== 'object' || stored === null) return undefined;
  const { key, bytes, content_type } = stored as Record<string, unknown>;
  if (typeof key !== 'string' || key === '' || typeof bytes !== 'number') return undefined;
  return { key, bytes, content_type: typeof content_type === 'string' ? content_type : '' };
}

/**
 * The media type the audio is served with: the stored one when it is audio, else bytes. The type
 * came from the CDN, and this answer comes from the dashboard's own origin: a `text/html` one
 * would be a page of the CDN's writing with the operator's credentials.
 */
const AUDIO_TYPE = /^audio\/[\w.+-]+$/i;
const servedType = (stored: string) =>
  AUDIO_TYPE.test(stored.split(';')[0]?.trim() ?? '')
    ? (stored.split(';')[0]?.trim() ?? '')
    : 'application/octet-stream';

/**
 * Streams a stored item from the store to `res`, a chunk at a time (never the whole file in
 * memory): its first chunk is read before the answer starts, so a name the store no longer
 * holds is a 404 with a detail rather than a 200 cut short. Trouble after that ends the answer
 * early and is thrown, for the error handler to log.
 */
export async function sendStoredAudio(
  res: Response,
  store: AudioStore,
  item: StoredItem,
): Promise<void> {
  const chunks = store.read(item.key)[Symbol.asyncIterator]();
  let first: IteratorResult<Uint8Array>;
  try {
    first = await chunks.next();
  } catch (error: unknown) {
    throw new HttpError(404, 'the stored audio is no longer in the store', {}, { cause: error });
  }
  res.status(200).set({
    'Content-Type': servedType(item.content_type),
    'Content-Length': String(item.bytes),
    // Played or saved, never run: whatever the bytes are, this origin gives them no powers.
    'Content-Security-Policy': "sandbox; default-src 'none'",
    'X-Content-Type-Options': 'nosniff',
  });
  async function* rest() {
    try {
      if (first.done !== true) yield first.value;
      for (let next = await chunks.next(); next.done !== true; next = await chunks.next())
        yield next.value;
    } finally {
      // A browser that stops listening (a player seeking, a page left) closes the store's stream.
      await chunks.return?.();
    }
  }
  await pipeline(Readable.from(rest(), { objectMode: false }), res).catch((error: unknown) => {
    // The browser stopped listening: nothing is wrong. Anything else is the error handler's.
    if ((error as { code?: unknown }).code !== 'ERR_STREAM_PREMATURE_CLOSE') throw error;
  });
}
