/**
 * Baseline for the end-to-end run, "naive worker": what a worker is at its simplest. Each job's
 * audio_url is fetched and written to a file in one go: no origin or address checks, no size cap,
 * no hash, no metadata, no fsync, no temp file and rename. The service's worker, with every one of
 * those, is measured as a ratio to this in the same run.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Worker } from 'bullmq';
import { Agent, request } from 'undici';

const dir = process.env.AUDIO_DIR ?? '';
const agent = new Agent({ connect: { ca: process.env.CDN_CA ?? '' }, connections: 128 });
const worker = new Worker<{ event: { data: { id: string; audio_url: string } } }>(
  'deliveries',
  async (job) => {
    const { id, audio_url: url } = job.data.event.data;
    const res = await request(url, { dispatcher: agent });
    await writeFile(join(dir, `${id}.mp3`), Buffer.from(await res.body.arrayBuffer()));
  },
  {
    connection: { url: process.env.REDIS_URL ?? '' },
    prefix: process.env.QUEUE_PREFIX ?? 'naive',
    concurrency: Number(process.env.WORKER_CONCURRENCY ?? '8'),
  },
);
void worker.waitUntilReady().then(() => process.send?.('listening'));
process.once('SIGTERM', () => {
  void worker.close().then(() => process.exit(0));
});
