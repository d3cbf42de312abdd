import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { provideRedis } from '../helpers/suite/global-setup';
import { HOW_TO_PROVIDE_REDIS, startPrivateRedis } from '../../harness/private-redis';

// README, "Development": with neither a reachable REDIS_URL nor redis-server on PATH,
// `npm test` fails at once with a message that says how to provide Redis.
function withEnv(name: string, value: string, work: () => Promise<unknown>): Promise<unknown> {
  const saved = process.env[name];
  process.env[name] = value;
  return work().finally(() => {
    process.env[name] = saved;
  });
}

it('a REDIS_URL that does not answer fails with how to provide Redis', async () => {
  await expect(withEnv('REDIS_URL', 'redis://127.0.0.1:1', provideRedis)).rejects.toThrow(
    `REDIS_URL=redis://127.0.0.1:1 does not answer; ${HOW_TO_PROVIDE_REDIS}`,
  );
});

it('no redis-server on PATH fails with how to provide Redis', async () => {
  // Jest gives tests a copy of process.env that child_process never sees, so name a missing binary.
  const missing = join(mkdtempSync(join(tmpdir(), 'aw-no-redis-')), 'redis-server');
  await expect(startPrivateRedis({ command: missing })).rejects.toThrow(HOW_TO_PROVIDE_REDIS);
});
