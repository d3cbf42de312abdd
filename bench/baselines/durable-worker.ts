/**
 * Baseline for the end-to-end run, "durable naive worker": the naive worker made as durable as the
 * local store (docs/storage.md): each job's audio_url is fetched in one go, written to a temp
 * file, fsynced and renamed to `<id>.mp3`; the delivery's data likewise to `<id>.json`; then the
 * directory is fsynced, so both names survive a crash. No origin or address checks, no size cap,
 * no hash, no archive. The service's worker CPU per item is measured as a ratio to this; the
 * naive worker (naive-worker.ts, no durability) is printed beside it as a ceiling.
 */
import { randomUUID } from 'node:crypto';
import { open, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { runNaiveWorker } from './naive-job-worker.js';

const dir = process.env.AUDIO_DIR ?? '';

/** `bytes` into `name` through a temp file of its own: write, fsync, close, rename. */
async function durably(name: string, bytes: Buffer | string): Promise<void> {
  const temp = join(dir, `.${name}.${randomUUID()}.tmp`);
  const file = await open(temp, 'wx', 0o644);
  try {
    await file.writeFile(bytes);
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(temp, join(dir, name));
}

runNaiveWorker(async (id, body, data) => {
  await durably(`${id}.mp3`, body);
  await durably(`${id}.json`, JSON.stringify(data));
  const folder = await open(dir, 'r');
  try {
    await folder.sync();
  } finally {
    await folder.close();
  }
});
