import type { Redis } from 'ioredis';
import request from 'supertest';
import { SENDER_RETRY_WINDOW_SECONDS } from '../../src/config/config';
import { deliveryKeys } from '../../src/queue/delivery-keys';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { startTestPipeline, type TestPipeline } from '../helpers/test-pipeline';
import { createTestReceiver, signed, type TestReceiver } from '../helpers/test-receiver';

/**
 * The dedupe mark is the service's own: whatever becomes of a delivery's job (an operator's
 * remove, clean or obliterate; BullMQ's own removal), the provider's retry of it is answered
 * 200 duplicate for DEDUPE_TTL_SECONDS and nothing runs twice.
 */
describe('the dedupe mark outlives the job', () => {
  let receiver: TestReceiver;
  beforeEach(async () => {
    receiver = await createTestReceiver();
  });
  afterEach(() => receiver.close());

  const post = (body: unknown) => {
    const { raw, headers } = signed(body);
    return request(receiver.listener).post('/webhooks').set(headers).send(raw);
  };
  const jobCount = async () =>
    Object.values(await receiver.queue.getJobCounts()).reduce((a, b) => a + b, 0);

  const removals: Record<string, (r: TestReceiver, jobId: string) => Promise<unknown>> = {
    "BullMQ's Job.remove": async (r, jobId) => (await r.queue.getJob(jobId))?.remove(),
    'Queue.remove (the dashboard and the CLI call it)': (r, jobId) => r.queue.remove(jobId),
    'Queue.clean of waiting jobs': (r) => r.queue.clean(0, 1000, 'wait'),
    'Queue.obliterate': (r) => r.queue.obliterate({ force: true }),
    'Queue.drain': (r) => r.queue.drain(true),
  };

  it.each(Object.entries(removals))(
    '%s: the re-send is a duplicate, no job is added',
    async (_name, remove) => {
      const delivery = sampleDelivery('audio.failed', { id: `removed-${_name}` });
      const first = await post(delivery).expect(202);
      expect(first.body).toEqual({ received: true, duplicate: false });
      const [job] = await receiver.queue.getJobs(['waiting']);
      expect(job?.id).toBeDefined();
      await remove(receiver, job?.id ?? '');
      expect(await jobCount()).toBe(0);

      const again = await post(delivery).expect(200);
      expect(again.body).toEqual({ received: true, duplicate: true });
      expect(await jobCount()).toBe(0);
    },
  );

  it('the mark lasts DEDUPE_TTL_SECONDS, longer than the sender retries plus the tolerance', async () => {
    const delivery = sampleDelivery('audio.ready', { id: 'ttl' });
    await post(delivery).expect(202);
    const { mark } = deliveryKeys(receiver.config.queuePrefix).pairOf('audio.ready', 'ttl');
    const redis = receiver.redis as Redis;
    const ttl = await redis.ttl(mark);
    // Within a few seconds of the configured TTL, however slow the machine.
    expect(ttl).toBeLessThanOrEqual(receiver.config.dedupeTtlSeconds);
    expect(ttl).toBeGreaterThan(receiver.config.dedupeTtlSeconds - 60);
    expect(ttl).toBeGreaterThan(
      SENDER_RETRY_WINDOW_SECONDS + receiver.config.signatureToleranceSeconds,
    );
    const [job] = await receiver.queue.getJobs(['waiting']);
    expect(await redis.get(mark)).toBe(job?.id);
  });

  it('once the mark expires, a re-send is accepted and handled again, then a duplicate again', async () => {
    const delivery = sampleDelivery('audio.failed', { id: 'expired' });
    const { mark } = deliveryKeys(receiver.config.queuePrefix).pairOf('audio.failed', 'expired');
    const redis = receiver.redis as Redis;
    const first = await post(delivery).expect(202);
    expect(first.body).toEqual({ received: true, duplicate: false });
    const before = await post(delivery).expect(200);
    expect(before.body).toEqual({ received: true, duplicate: true });
    expect(await jobCount()).toBe(1);

    // Its DEDUPE_TTL_SECONDS run out now: an expiry time in the past ends the key at once.
    expect(await redis.pexpireat(mark, 1)).toBe(1);
    const after = await post(delivery).expect(202);
    expect(after.body).toEqual({ received: true, duplicate: false });
    const jobs = await receiver.queue.getJobs(['waiting']);
    expect(jobs).toHaveLength(2);
    const [older, newer] = jobs.sort((a, b) => a.timestamp - b.timestamp);
    expect(older?.id).not.toBe(newer?.id);
    // The new mark names the new job and lasts the whole DEDUPE_TTL_SECONDS again.
    expect(await redis.get(mark)).toBe(newer?.id);
    expect(await redis.ttl(mark)).toBeGreaterThan(receiver.config.dedupeTtlSeconds - 60);

    const again = await post(delivery).expect(200);
    expect(again.body).toEqual({ received: true, duplicate: true });
    expect(await jobCount()).toBe(2);
  });

  it('the same event and data.id with another body is a duplicate; another event is not', async () => {
    const first = sampleDelivery('audio.failed', { id: 'same', data: { reason: 'one' } });
    await post(first).expect(202);
    const other = await post(
      sampleDelivery('audio.failed', { id: 'same', data: { reason: 'two' } }),
    );
    expect(other.status).toBe(200);
    expect(other.body).toEqual({ received: true, duplicate: true });
    // One job, holding the body accepted first, byte for byte.
    const jobs = await receiver.queue.getJobs(['waiting']);
    expect(jobs).toHaveLength(1);
    expect(jobs[0]?.data.body).toBe(signed(first).raw);
    await post(sampleDelivery('key.revoked', { id: 'same' })).expect(202);
    expect(await jobCount()).toBe(2);
  });

  it('pairs that would spell the same joined string stay apart', async () => {
    await post({ event: 'x.y', data: { id: 'a:b' } }).expect(200); // unknown event: ignored
    const a = deliveryKeys('p').pairOf('audio.ready', 'a:b');
    const b = deliveryKeys('p').pairOf('audio.ready:a', 'b');
    expect(a.mark).not.toBe(b.mark);
    // Bounded whatever the id.
    expect(deliveryKeys('p').pairOf('audio.ready', 'x'.repeat(100_000)).mark.length).toBeLessThan(
      60,
    );
  });

  it('a dedupe key an earlier version wrote (BullMQ\u2019s own, by the plain id) still counts as seen', async () => {
    const redis = receiver.redis as Redis;
    const prefix = receiver.config.queuePrefix;
    const { mark, legacy } = deliveryKeys(prefix).pairOf('audio.failed', 'legacy');
    await redis.set(legacy, 'earlier-job', 'EX', 3600);
    const again = await post(sampleDelivery('audio.failed', { id: 'legacy' })).expect(200);
    expect(again.body).toEqual({ received: true, duplicate: true });
    expect(await jobCount()).toBe(0);
    // The mark takes it over, with what was left of its time.
    expect(await redis.get(mark)).toBe('earlier-job');
    expect(await redis.ttl(mark)).toBeLessThanOrEqual(3600);
  });

  it('concurrent first deliveries of one pair: one 202, the rest 200 duplicate, one job', async () => {
    const delivery = sampleDelivery('audio.failed', { id: 'at-once' });
    const answers = await Promise.all(Array.from({ length: 20 }, () => post(delivery)));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 202)).toHaveLength(1);
    expect(statuses.filter((s) => s === 200)).toHaveLength(19);
    expect(await jobCount()).toBe(1);
  });
});

describe('a handled delivery whose job an operator cleaned', () => {
  let pipeline: TestPipeline;
  beforeEach(async () => {
    pipeline = await startTestPipeline({});
  });
  afterEach(() => pipeline.close());

  it('is answered duplicate and handled once', async () => {
    const delivery = sampleDelivery('audio.failed', { id: 'cleaned-after-handling' });
    await pipeline.post(delivery).expect(202);
    expect((await pipeline.settled('cleaned-after-handling')).state).toBe('completed');
    const { queue } = pipeline.receiver;
    expect(await queue.clean(0, 1000, 'completed')).toHaveLength(1);

    const again = await pipeline.post(delivery).expect(200);
    expect(again.body).toEqual({ received: true, duplicate: true });
    const failures = await pipeline.cli('failures', '--json');
    expect(JSON.parse(failures.stdout)).toHaveLength(1);
    expect(await queue.getJobCounts('wait', 'active', 'delayed', 'completed')).toEqual({
      wait: 0,
      active: 0,
      delayed: 0,
      completed: 0,
    });
  });
});
