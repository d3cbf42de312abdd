import { randomUUID } from 'node:crypto';
import { DelayedError, Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { DestinationBoard } from '../../src/forwarding/destination-board';
import { destinationControl } from '../../src/forwarding/destination-control';
import { createLogger } from '../../src/telemetry/logger';
import { eventually } from '../../src/util/eventually';
import { deleteKeys } from '../helpers/test-receiver';

const redis = new Redis(process.env.REDIS_URL ?? '', { maxRetriesPerRequest: null });
afterAll(() => {
  redis.disconnect();
});

it('a held job that is running when its destination drains stays held, and is promoted once its run has put it to sleep (the soak found 22 asleep for HELD_RECHECK_MS)', async () => {
  const prefix = `test-${randomUUID()}`;
  const queue = new Queue('forwards', { connection: redis, prefix });
  const control = destinationControl(redis, prefix, ['d'], { pauseAfter: 1, probeMs: 1000 });
  let started!: () => void;
  const running = new Promise<void>((resolve) => (started = resolve));
  let letGo!: () => void;
  const gate = new Promise<void>((resolve) => (letGo = resolve));
  // A run told to hold before the resume: it goes back to sleep for 15 minutes.
  const worker = new Worker(
    'forwards',
    async (job, token) => {
      started();
      await gate;
      await job.moveToDelayed(Date.now() + 15 * 60 * 1000, token);
      throw new DelayedError();
    },
    { connection: redis, prefix },
  );
  try {
    await queue.add('audio.failed', {}, { jobId: 'held-1' });
    await running;
    await control.rehold('d', 'held-1');
    const board = new DestinationBoard(control, queue, createLogger('silent'), () => undefined);
    // The destination is active: the tick drains the held set while the job runs.
    await board.tick();
    letGo();
    await eventually(async () =>
      (await queue.getJobState('held-1')) === 'delayed' ? true : undefined,
    );
    await worker.close();
    await board.tick();
    expect(await queue.getJobState('held-1')).toBe('waiting');
  } finally {
    await worker.close();
    await queue.close();
    await deleteKeys(redis, `${prefix}:*`);
  }
});
