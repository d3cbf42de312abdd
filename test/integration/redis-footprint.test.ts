import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { eventually } from '../../src/util/eventually';
import { createForwardQueue, forwardJobId } from '../../src/queue/forward-queue';
import {
  forwardSecret,
  startHttpEndpoint,
  type HttpEndpoint,
} from '../helpers/forward-destinations';
import { startTestPipeline, type TestPipeline } from '../helpers/test-pipeline';
import { deleteKeys } from '../helpers/test-receiver';

/**
 * What a delivery costs in the queue's Redis, which is noeviction: once full, every delivery is
 * refused. A 1,048,428-byte body of [1e20,…] was queued as 4,612,953 bytes (a re-serialised
 * object), its forward copied it again, and a completed job kept it for a day: 22.6 MB left
 * after one 1.5 MB body was handled and forwarded. Targets (issue "Accepted, then stuck"): a
 * waiting delivery ≤ body + 2 KB, a completed one ≤ 2 KB whatever the body, a pending forward
 * ≤ its message + 1 KB. MEMORY USAGE with SAMPLES 0 counts every byte of the job's hash.
 */
let redis: Redis;
let endpoint: HttpEndpoint;
let pipeline: TestPipeline;

beforeAll(async () => {
  redis = new Redis(process.env.REDIS_URL ?? '');
  const secret = forwardSecret();
  endpoint = await startHttpEndpoint(secret);
  endpoint.failing = true;
  pipeline = await startTestPipeline({}, undefined, {
    FORWARD_URLS: endpoint.url,
    FORWARD_SECRET: secret,
    // The first attempt fails; the next is far off, so the forward waits to be measured.
    FORWARD_BACKOFF_MS: '600000',
  });
});

afterAll(async () => {
  await pipeline.close();
  await endpoint.close();
  await deleteKeys(redis, `${pipeline.receiver.config.queuePrefix}:*`);
  redis.disconnect();
});

/** An audio.failed delivery of about `bytes` bytes whose data holds numbers written short. */
function bodyOf(id: string, bytes: number): string {
  const head = `{"event":"audio.failed","data":{"id":"${id}","values":[`;
  const count = Math.floor((bytes - head.length - 3) / 5);
  return `${head}${Array.from({ length: count }, () => '1e20').join(',')}]}}`;
}

/**
 * The bytes a job's hash holds: every field's name and value. MEMORY USAGE adds the allocator's
 * rounding, printed beside it: jemalloc gives a string of 1 MiB + 1 byte a 1.25 MiB block.
 */
async function stored(key: string): Promise<{ bytes: number; memory: number }> {
  const fields = await redis.hkeys(key);
  const lengths = await Promise.all(fields.map((field) => redis.hstrlen(key, field)));
  const bytes = fields.reduce(
    (sum, field, i) => sum + Buffer.byteLength(field) + (lengths[i] ?? 0),
    0,
  );
  const memory = Number(await redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
  return { bytes, memory };
}

it.each([
  ['400 B', 400],
  ['1 KB', 1024],
  ['1 MB', 1_048_428],
])(
  '%s body: waiting ≤ body + 2 KB, completed ≤ 2 KB, pending forward ≤ message + 1 KB',
  async (label, size) => {
    const id = `footprint-${randomUUID()}`;
    const body = bodyOf(id, size);
    const prefix = pipeline.receiver.config.queuePrefix;
    const { queue } = pipeline.receiver;
    // Paused for every worker, so the job is still waiting when it is measured.
    await queue.pause();
    const answer = await pipeline.post(body).expect(202);
    expect(answer.body).toEqual({ received: true, duplicate: false });
    const [job] = await pipeline.receiver.queue.getWaiting(0, 0);
    const jobId = String(job?.id);
    const waiting = await stored(`${prefix}:deliveries:${jobId}`);
    expect(waiting.bytes).toBeLessThanOrEqual(body.length + 2048);

    await queue.resume();
    expect(await pipeline.settled(id)).toMatchObject({ state: 'completed' });
    const completed = await stored(`${prefix}:deliveries:${jobId}`);
    expect(completed.memory).toBeLessThanOrEqual(2048);

    const forwards = createForwardQueue(redis, prefix);
    try {
      // Its first attempt failed (the endpoint answers 503): it waits for the next.
      const forward = await eventually(async () => {
        const found = await forwards.getJob(forwardJobId(jobId));
        return (await found?.getState()) === 'delayed' ? found : undefined;
      });
      const message = forward.data.body;
      // The provider's text, not a copy re-serialised: 1e20 is still 1e20.
      expect(message).toContain('[1e20,1e20');
      expect(message.length).toBeLessThanOrEqual(body.length + 300);
      const pending = await stored(`${prefix}:forwards:${forwardJobId(jobId)}`);
      expect(pending.bytes).toBeLessThanOrEqual(Buffer.byteLength(message) + 1024);

      // Sent at last: the forward job is kept an hour, without the message.
      endpoint.failing = false;
      await forward.promote();
      await eventually(async () => ((await forward.isCompleted()) ? true : undefined));
      const sent = await stored(`${prefix}:forwards:${forwardJobId(jobId)}`);
      expect(sent.memory).toBeLessThanOrEqual(2048);
      endpoint.failing = true;
      console.log(
        `${label} body (${body.length} B), bytes held (MEMORY USAGE): waiting ${waiting.bytes} (${waiting.memory}), completed ${completed.bytes} (${completed.memory}), pending forward ${pending.bytes} (${pending.memory}) for a message of ${message.length}, sent forward ${sent.bytes} (${sent.memory})`,
      );
    } finally {
      await forwards.close();
    }
  },
);
