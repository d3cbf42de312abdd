import type { FileArea } from '../storage/audio-store.js';
import { writtenAt, type BlobArea } from './tts-cache.js';

/** Beside the archive's day folders (`YYYY-MM-DD/`), which are all that replay and its sweep read. */
const FOLDER = 'tts-cache';
const HOUR_MS = 3_600_000;

/**
 * The TTS cache's bodies in the audio store, under `<AUDIO_DIR or S3_PREFIX>.archive/tts-cache/`:
 * the one place every host of a deployment reads (an S3 bucket, a shared volume), so a body one
 * host kept serves the others, as the index in the shared Redis promises; host-local folders
 * would make every other host call again.
 * Redis itself is no place for bodies (`noeviction`, the queue's), and an index naming the host
 * that holds a body would still leave the other hosts calling. The store's `archive` is its
 * area for small files, in every store the framework has; bodies are filed by the hour they were
 * written, so a sweep removes whole hour folders and never reads an age.
 */
export function createStoreCacheArea(area: FileArea): BlobArea {
  const path = (name: string) => `${FOLDER}/${Math.floor(writtenAt(name) / HOUR_MS)}/${name}`;
  return {
    put: (name, bytes) => area.put(path(name), bytes),
    async get(name) {
      const bytes = await area.get(path(name));
      return bytes === undefined
        ? undefined
        : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    },
    /** Removes the hour folders wholly older than `ms`; returns how many folders. */
    async removeOlderThan(ms) {
      const cutoff = Date.now() - ms;
      const old: string[] = [];
      // Listed first, removed after: a store's listing is not asked to survive removals under it.
      for await (const hour of area.list(`${FOLDER}/`)) {
        const start = /^\d+\/$/.test(hour) ? Number(hour.slice(0, -1)) * HOUR_MS : undefined;
        if (start !== undefined && start + HOUR_MS <= cutoff) old.push(hour);
      }
      for (const hour of old) await area.remove(`${FOLDER}/${hour}`);
      return old.length;
    },
  };
}
