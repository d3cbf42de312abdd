/**
 * Baseline for the end-to-end run, "naive worker": what a worker is at its simplest. Each job's
 * audio_url is fetched and written to a file in one go: no origin or address checks, no size cap,
 * no hash, no metadata, no fsync, no temp file and rename. The service's worker, with every one of
 * those, is measured as a ratio to this in the same run.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runNaiveWorker } from './naive-job-worker.js';

const dir = process.env.AUDIO_DIR ?? '';
runNaiveWorker((id, body) => writeFile(join(dir, `${id}.mp3`), body));
