import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { ADMIN_PATH, DASHBOARD_GUESSES } from '../../src/receiver/admin-dashboard';
import { eventually } from '../../src/util/eventually';
import { freePort } from '../../harness/private-redis';
import { serviceSettings, webOn } from '../helpers/service-settings';
import { spawnService, type ServiceProcess } from '../helpers/spawn-service';
import { deleteKeys } from '../helpers/test-receiver';

// Only wrong passwords count toward the guessing limit, and the count is the service's, not a
// process's: two receiver processes on one Redis, as two replicas run.

const PASSWORD = 'dashboard guesses test password';
const prefix = `test-${randomUUID()}`;
let boards: string[];

function startReceiver(port: number): ServiceProcess {
  return spawnService(
    serviceSettings({ QUEUE_PREFIX: prefix, ...webOn(port), ADMIN_PASSWORD: PASSWORD }),
  );
}

beforeAll(async () => {
  const ports = [await freePort(), await freePort()];
  const services = ports.map(startReceiver);
  await Promise.all(services.map((service) => service.receiving()));
  boards = ports.map((port) => `http://127.0.0.1:${port}${ADMIN_PATH}`);
  for (const port of ports)
    await eventually(
      async () => {
        const ready = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined);
        return ready?.ok === true ? true : undefined;
      },
      { timeoutMs: 20_000, everyMs: 100 },
    );
}, 60_000);
afterAll(async () => {
  const redis = new Redis(process.env.REDIS_URL ?? '');
  await deleteKeys(redis, `${prefix}:*`);
  redis.disconnect();
});

/** `count` logins at once from this one address, spread over both processes: their statuses. */
async function logins(count: number, password: (i: number) => string): Promise<number[]> {
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const res = await fetch(boards[i % 2] ?? '', {
        headers: {
          authorization: `Basic ${Buffer.from(`admin:${password(i)}`).toString('base64')}`,
        },
        signal: AbortSignal.timeout(15_000),
      });
      await res.arrayBuffer();
      return res.status;
    }),
  );
}

it('20 operators behind one address, at once, with the right password: all 200', async () => {
  expect(await logins(20, () => PASSWORD)).toEqual(Array<number>(20).fill(200));
}, 30_000);

it('30 wrong passwords at once over two processes: 10 judged wrong, the rest 429; then the right one is 429 too', async () => {
  const statuses = await logins(30, (i) => `guess-${i}`);
  expect(statuses.filter((status) => status === 401)).toHaveLength(DASHBOARD_GUESSES.points);
  expect(statuses.filter((status) => status === 429)).toHaveLength(30 - DASHBOARD_GUESSES.points);
  expect(await logins(2, () => PASSWORD)).toEqual([429, 429]);
}, 30_000);
