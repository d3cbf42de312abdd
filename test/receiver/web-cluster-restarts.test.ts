import { Redis } from 'ioredis';
import { withDeadline } from '../../src/util/deadline';
import { freePort, startPrivateRedis } from '../../harness/private-redis';
import { serviceSettings } from '../helpers/service-settings';
import { signalledAtLine, spawnService, type ServiceProcess } from '../helpers/spawn-service';
import { postOnNewConnection } from '../helpers/test-receiver';
import { afterTest } from '../helpers/after-test';

/**
 * Which deaths of a receiver process the cluster primary (src/receiver/cluster.ts) replaces and
 * which stop the receiver: a process killed while it starts is replaced (the soak once killed a
 * replacement before it listened, and the primary took it for a refused start and exited 1); a
 * refused start still stops it at once; a crash loop still ends.
 */

function startCluster(port: number, extra: Record<string, string> = {}): ServiceProcess {
  return spawnService(
    serviceSettings({ ...extra, ROLE: 'web', PORT: String(port), WEB_CONCURRENCY: '2' }),
  );
}

const post = postOnNewConnection;

/** The primary's line for the `nth` process it forks in place of a dead one (1 for the first). */
async function nthReplacement(service: ServiceProcess, nth: number): Promise<number> {
  await withDeadline(
    service.until(
      () => service.logs.filter((line) => line.msg === 'receiver process forked').length >= nth,
    ),
    30_000,
    `replacement receiver process #${String(nth)} forked`,
  );
  const forked = service.logs.filter((line) => line.msg === 'receiver process forked');
  return forked[nth - 1]?.pid as number;
}

/** The primary's line for the death of `pid`. */
function deathOf(service: ServiceProcess, pid: number) {
  return service.logs.find(
    (line) => line.msg === 'receiver process died; replacing it' && line.pid === pid,
  );
}

it('a replacement killed (SIGKILL) before it listened is replaced in turn; the port keeps answering', async () => {
  const port = await freePort();
  const service = startCluster(port);
  const [first, second] = await withDeadline(service.receiving(2), 30_000, 'two processes up');
  process.kill(first ?? 0, 'SIGKILL');
  // As soon as the primary forks it: the replacement is still loading, far from listening.
  const replacement = await nthReplacement(service, 1);
  process.kill(replacement, 'SIGKILL');
  const pids = await withDeadline(service.receiving(3), 30_000, 'a second replacement up');
  expect(pids).toHaveLength(3);
  expect(pids).not.toContain(replacement);
  expect(pids.slice(0, 2)).toEqual([first, second]);
  expect(deathOf(service, replacement)).toMatchObject({ signal: 'SIGKILL', listened: false });
  expect(service.logs).not.toContainEqual(
    expect.objectContaining({ msg: 'a receiver process failed at start-up; stopping the others' }),
  );
  expect(await post(port, 'key_after_start_kill')).toBe(202);
  service.child.kill('SIGTERM');
  expect(await withDeadline(service.exited, 30_000, 'the graceful stop')).toBe(0);
}, 60_000);

it('a replacement whose start is refused (maxmemory-policy changed meanwhile) stops the receiver at once: exit 1, one line', async () => {
  const redis = await startPrivateRedis();
  afterTest(() => redis.stop());
  const admin = new Redis(redis.url);
  afterTest(() => {
    admin.disconnect();
  });
  const port = await freePort();
  const service = startCluster(port, { REDIS_URL: redis.url });
  const [first] = await withDeadline(service.receiving(2), 30_000, 'two processes up');
  await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
  process.kill(first ?? 0, 'SIGKILL');
  const replacement = await nthReplacement(service, 1);
  expect(await withDeadline(service.exited, 30_000, 'the receiver to stop')).toBe(1);
  expect(service.logs).toContainEqual(
    expect.objectContaining({
      msg: 'a receiver process failed at start-up; stopping the others',
      pid: replacement,
      code: 78,
    }),
  );
  const lines = service.stderr().trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/maxmemory-policy is allkeys-lru/);
}, 60_000);

it('killed at start-up again and again: the fifth early death in a row stops the receiver, exit 1', async () => {
  const port = await freePort();
  const service = startCluster(port);
  const [first] = await withDeadline(service.receiving(2), 30_000, 'two processes up');
  process.kill(first ?? 0, 'SIGKILL');
  // Four replacements killed as they are forked (after 0, 1, 2 and 4 s): deaths 2 to 5.
  for (let nth = 1; nth <= 4; nth++) process.kill(await nthReplacement(service, nth), 'SIGKILL');
  expect(await withDeadline(service.exited, 30_000, 'the receiver to stop')).toBe(1);
  expect(
    service.logs
      .filter((line) => line.msg === 'receiver process died; replacing it')
      .map((line) => line.restartInMs),
  ).toEqual([0, 1000, 2000, 4000]);
  expect(service.logs).toContainEqual(
    expect.objectContaining({
      msg: 'receiver processes keep dying soon after they start; stopping the others',
      deathsInARow: 5,
    }),
  );
}, 60_000);

it('SIGTERM while the receiver processes still load: each is asked once it hears, shuts down, and the primary exits 0', async () => {
  const port = await freePort();
  // The primary has just forked them: they are loading their modules, not yet listening for its
  // messages (a stop sent then was lost, and the primary waited for them for ever). The signal
  // comes as the primary logs its line, before it runs another statement: a primary that
  // listened for signals only after that line died of it (no graceful stop, exit by signal).
  const line = 'receiver processes starting (WEB_CONCURRENCY)';
  const service = spawnService(
    serviceSettings({ ROLE: 'web', PORT: String(port), WEB_CONCURRENCY: '2' }),
    signalledAtLine(line),
  );
  expect(await withDeadline(service.exited, 30_000, 'the graceful stop')).toBe(0);
  expect(service.logs).toContainEqual(expect.objectContaining({ msg: line }));
  const stopped = service.logs.filter(
    (entry) => entry.msg === 'shutting down' && entry.signal === 'primary',
  );
  expect(stopped).toHaveLength(2);
  // Nothing holds the port.
  await expect(post(port, 'key_after_early_stop')).rejects.toThrow();
}, 60_000);
