/**
 * One process of the limiter benchmark: admits `count` requests through the shared limiter, 50 at
 * a time, and reports how long that took. Forked by bench/limiter.ts.
 */
import { Redis } from 'ioredis';
import { createLimiter } from '../src/provider/limiter.js';

export interface LimiterJob {
  readonly redisUrl: string;
  readonly prefix: string;
  readonly count: number;
}

export async function admitMany({ redisUrl, prefix, count }: LimiterJob): Promise<number> {
  const redis = new Redis(redisUrl, { enableAutoPipelining: true });
  // A limit no run reaches: this measures the script's cost, not waiting.
  const limiter = createLimiter(
    redis,
    prefix,
    { tts: 1e9, 'voice-convert': 1e9, voices: 1e9 },
    60_000,
  );
  await limiter.tryAdmit('key_warm', 'tts');
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: 50 }, async () => {
      while (next++ < count) await limiter.tryAdmit(`key_${next % 8}`, 'tts');
    }),
  );
  const elapsed = performance.now() - started;
  redis.disconnect();
  return elapsed;
}

if (require.main === module) {
  process.once('message', (job: LimiterJob) => {
    void admitMany(job).then((elapsed) => {
      process.send?.(elapsed);
      process.exit(0);
    });
  });
}
