/**
 * What both naive workers share: a BullMQ worker on the delivery queue that fetches each job's
 * audio_url in one go with plain undici and hands the bytes and the delivery's data to `save`. No checks, no hash, no
 * metadata, no archive: the baselines the service's worker is measured against.
 */
import { Worker } from 'bullmq';
import { Agent, request } from 'undici';

export function runNaiveWorker(
  save: (id: string, body: Buffer, data: Record<string, unknown>) => Promise<unknown>,
): void {
  const agent = new Agent({ connect: { ca: process.env.CDN_CA ?? '' }, connections: 128 });
  const worker = new Worker<{ body: string }>(
    'deliveries',
    async (job) => {
      // The queue holds the body as the provider sent it; any worker parses it once.
      const delivery = JSON.parse(job.data.body) as {
        data: { id: string; audio_url: string } & Record<string, unknown>;
      };
      const { id, audio_url: url } = delivery.data;
      const res = await request(url, { dispatcher: agent });
      await save(id, Buffer.from(await res.body.arrayBuffer()), delivery.data);
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
}
