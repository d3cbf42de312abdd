import { freePort, startPrivateRedis } from '../harness/private-redis.js';
import { measure } from './ingestion-section.js';
import { ratio, spawnService, stop } from './lib.js';
import type { Section } from './section.js';

/**
 * The price of REDIS_WAIT_REPLICAS=1: the receiver's ingestion with a replica acknowledging every
 * delivery, against the same receiver without, in the same run.
 */
export async function runReplicaWait(redisServer: {
  url: string;
  port: number;
}): Promise<Section<unknown>> {
  const replica = await startPrivateRedis({
    persistent: true,
    args: ['--replicaof', '127.0.0.1', String(redisServer.port)],
  });
  try {
    const run = async (waitReplicas: string, prefix: string) => {
      const port = await freePort();
      const receiver = await spawnService({
        PORT: String(port),
        REDIS_URL: redisServer.url,
        LOG_LEVEL: 'info',
        ROLE: 'web',
        QUEUE_PREFIX: prefix,
        REDIS_WAIT_REPLICAS: waitReplicas,
      });
      return measure(
        `receiver, REDIS_WAIT_REPLICAS=${waitReplicas}`,
        `http://127.0.0.1:${port}/webhooks`,
      ).finally(() => stop(receiver));
    };
    const without = await run('0', 'bench-wait-0');
    const withWait = await run('1', 'bench-wait-1');
    const figures = {
      withoutPerSecond: without.acceptedPerSecond,
      withPerSecond: withWait.acceptedPerSecond,
      withP99Ms: withWait.p99Ms,
      ratio: ratio(withWait.acceptedPerSecond, without.acceptedPerSecond),
    };
    return {
      title: 'The price of REDIS_WAIT_REPLICAS=1',
      figures,
      lines: [
        `with a replica acknowledging every delivery: ${figures.withPerSecond}/s (p99 ${figures.withP99Ms} ms) against ${figures.withoutPerSecond}/s without, in the same run: ratio ${figures.ratio}`,
      ],
      targets: [],
    };
  } finally {
    await replica.stop();
  }
}
