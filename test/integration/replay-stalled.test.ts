import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { ArchivedDelivery } from '../../src/archive/archive';
import { replayDeliveries, ReplayStalledError } from '../../src/archive/replay';
import { replayQuery, resumeCommand, type ReplayArgs } from '../../src/cli/replay-command';
import { createDeliveryQueue } from '../../src/queue/delivery-queue';
import { deleteKeys } from '../helpers/test-receiver';

// A replay whose backlog never goes down (no worker takes jobs) stops, and says how to go on
// with exactly what was asked: the ids, the end and the event kept, the times made absolute.
const NOW = new Date('2026-11-24T10:30:00.000Z');

it('a stalled replay of one id prints the command that resumes exactly that replay', async () => {
  const prefix = `test-${randomUUID()}`;
  const redis = new Redis(process.env.REDIS_URL ?? '', { maxRetriesPerRequest: null });
  const queue = createDeliveryQueue({ connection: redis, prefix });
  const args: ReplayArgs = {
    ids: ['item 1'],
    since: '2h',
    until: '30m',
    event: 'audio.ready',
    dryRun: false,
    json: false,
  };
  const query = replayQuery(args, NOW);
  const entries: ArchivedDelivery[] = [1, 2, 3].map((n) => ({
    event: 'audio.ready',
    id: 'item 1',
    received_at: `2026-11-24T09:0${n}:00.000Z`,
    job_id: `job-${n}`,
    delivery: { event: 'audio.ready', data: { id: 'item 1' } },
  }));
  try {
    const replay = replayDeliveries(queue, entries, {
      batchSize: 1,
      maxBacklog: 1,
      stalledAfterMs: 1_000,
      resumeCommand: (from) => resumeCommand(args, query, from),
    });
    await expect(replay).rejects.toThrow(ReplayStalledError);
    await expect(replay).rejects.toThrow(
      "1 replayed so far. Resume with: audio-webhooks replay --id 'item 1' --since 2026-11-24T09:00:00.000Z --until 2026-11-24T10:00:00.000Z --event audio.ready",
    );
  } finally {
    await queue.close();
    await deleteKeys(redis, `${prefix}:*`);
    redis.disconnect();
  }
});
