import { createServer, type Server } from 'node:net';
import { randomUUID } from 'node:crypto';
import { sampleDelivery } from '../../src/webhooks/sample-delivery';
import { freePort } from '../helpers/private-redis';
import { eventually } from '../helpers/sandbox-process';
import { spawnService, type ServiceProcess } from '../helpers/spawn-service';
import { signed, TEST_SECRET } from '../helpers/test-receiver';

const running: ServiceProcess[] = [];
afterEach(() => {
  for (const service of running.splice(0)) service.child.kill('SIGKILL');
});

function startCluster(
  port: number,
  processes = 2,
  redisUrl = process.env.REDIS_URL ?? '',
): ServiceProcess {
  const service = spawnService({
    WEBHOOK_SECRETS: TEST_SECRET,
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: `cluster-${randomUUID()}`,
    ROLE: 'web',
    HOST: '127.0.0.1',
    PORT: String(port),
    WEB_CONCURRENCY: String(processes),
  });
  running.push(service);
  return service;
}

/**
 * Pids of the receiver processes that logged "started", once `count` of them have and each is
 * connected to Redis (until then a process answers 503, which a loaded machine makes visible).
 */
async function startedPids(service: ServiceProcess, count: number): Promise<number[]> {
  return eventually(async () => {
    const pidsOf = (msg: string) =>
      service.logs.filter((line) => line.msg === msg).map((line) => line.pid as number);
    const started = pidsOf('audio-webhooks started');
    const connected = new Set(pidsOf('Redis connected'));
    return Promise.resolve(
      started.length >= count && started.every((pid) => connected.has(pid)) ? started : undefined,
    );
  });
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function post(port: number, id: string): Promise<number> {
  const { raw, headers } = signed(sampleDelivery('key.revoked', { id }));
  const res = await fetch(`http://127.0.0.1:${port}/webhooks`, {
    method: 'POST',
    headers: { ...headers, connection: 'close' },
    body: raw,
  });
  return res.status;
}

it('WEB_CONCURRENCY=2: two receiver processes share the port and all shut down gracefully on SIGTERM', async () => {
  const port = await freePort();
  const service = startCluster(port);
  const pids = await startedPids(service, 2);
  expect(new Set(pids).size).toBe(2);
  expect(pids).not.toContain(service.child.pid);

  const statuses = [];
  for (let i = 0; i < 20; i++) statuses.push(await post(port, `key_${String(i)}`));
  expect(statuses).toEqual(Array(20).fill(202));
  const served = new Set(
    service.logs.filter((line) => line.msg === 'request completed').map((line) => line.pid),
  );
  expect(served).toEqual(new Set(pids));

  service.child.kill('SIGTERM');
  expect(await service.exited).toBe(0);
  const closed = service.logs.filter(
    (line) => line.msg === 'shutdown step done' && line.step === 'redis',
  );
  expect(new Set(closed.map((line) => line.pid))).toEqual(new Set(pids));
  for (const pid of pids) expect(alive(pid)).toBe(false);
});

it('a receiver process that dies is replaced; the port keeps answering', async () => {
  const port = await freePort();
  const service = startCluster(port);
  const [first, second] = await startedPids(service, 2);
  if (first === undefined || second === undefined) throw new Error('two processes expected');
  process.kill(first, 'SIGKILL');
  const pids = await startedPids(service, 3);
  const replacement = pids[2] ?? 0;
  expect([first, second]).not.toContain(replacement);
  expect(service.logs).toContainEqual(
    expect.objectContaining({ msg: 'receiver process died; replacing it', pid: first }),
  );
  expect(await post(port, 'key_after')).toBe(202);
  service.child.kill('SIGTERM');
  expect(await service.exited).toBe(0);
});

it('the primary killed outright takes its receiver processes with it: no orphan holds the port', async () => {
  const port = await freePort();
  const service = startCluster(port);
  const pids = await startedPids(service, 2);
  service.child.kill('SIGKILL');
  await service.exited;
  await eventually(async () => Promise.resolve(pids.some(alive) ? undefined : true));
  // The port is free again.
  const probe: Server = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen(port, '127.0.0.1', resolve);
  });
  probe.close();
});

it('a start-up failure in the receiver processes stops the service with the one-line reason', async () => {
  const port = await freePort();
  const taken: Server = createServer();
  await new Promise<void>((resolve) => taken.listen(port, '127.0.0.1', resolve));
  try {
    const service = startCluster(port);
    expect(await service.exited).toBe(1);
    expect(service.stderr()).toContain(`PORT ${String(port)}`);
    expect(service.logs).toContainEqual(
      expect.objectContaining({
        msg: 'a receiver process failed at start-up; stopping the others',
      }),
    );
  } finally {
    taken.close();
  }
});

it('Redis down at start: the processes join the port within 2 s and answer 503 with Retry-After', async () => {
  const port = await freePort();
  const service = startCluster(port, 2, `redis://127.0.0.1:${String(await freePort())}`);
  await eventually(async () =>
    Promise.resolve(
      service.logs.filter((line) => line.msg === 'audio-webhooks started').length === 2
        ? true
        : undefined,
    ),
  );
  const { raw, headers } = signed(sampleDelivery('key.revoked', { id: 'key_no_redis' }));
  const res = await fetch(`http://127.0.0.1:${port}/webhooks`, {
    method: 'POST',
    headers,
    body: raw,
  });
  expect(res.status).toBe(503);
  expect(res.headers.get('retry-after')).toBe('5');
  service.child.kill('SIGTERM');
  expect(await service.exited).toBe(0);
});
