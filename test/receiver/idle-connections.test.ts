import { randomUUID } from 'node:crypto';
import { get, type ClientRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { openFileLimit } from '../../src/util/open-file-limit';
import { withDeadline } from '../../src/util/deadline';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { freePort } from '../../harness/private-redis';
import { serviceSettings } from '../helpers/service-settings';
import { spawnService } from '../helpers/spawn-service';
import { deleteKeys, signed } from '../helpers/test-receiver';

// One client holding 2,000 idle connections must not turn anyone else away at the defaults: the
// cap on connections follows the open-file limit (here 20,000, set by the shell that starts the
// service), and the header timeout closes what sends nothing.

const IDLE = 2_000;
const OPEN_FILES = 20_000;
const MAIN = join(__dirname, '..', '..', 'dist', 'main.js');

/**
 * GET /healthz on a connection of its own: the kernel hands a listener its connections in the
 * order they came, so once this is answered, every connection opened before it was accepted.
 */
function healthOnNewConnection(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    get({ port, host: '127.0.0.1', path: '/healthz', agent: false, timeout: 5_000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    })
      .once('timeout', function (this: ClientRequest) {
        this.destroy(new Error('/healthz did not answer within 5 s'));
      })
      .once('error', reject);
  });
}

/**
 * Opens `count` idle connections, in batches under the listen backlog, each batch accepted (a
 * /healthz behind it answered 200) before the next: a connection the kernel could not queue
 * would stay half open on the server's side, never accepted and so never timed out.
 */
async function holdIdle(port: number, count: number, sockets: Socket[]): Promise<void> {
  for (let at = 0; at < count; at += 100) {
    // Each reads (nothing comes until the server ends it), so the server's end is seen at once;
    // TCP keep-alive probes end one the server's kernel dropped unaccepted (a full backlog on a
    // loaded machine), which would otherwise look open here for ever. Neither sends a byte of HTTP.
    const batch = Array.from({ length: Math.min(100, count - at) }, () =>
      connect(port, '127.0.0.1').setKeepAlive(true, 1_000).resume(),
    );
    sockets.push(...batch);
    await Promise.all(
      batch.map(
        (socket) =>
          new Promise<void>((resolve, reject) => {
            socket.once('connect', resolve).once('error', reject);
          }),
      ),
    );
    expect(await healthOnNewConnection(port)).toBe(200);
  }
}

const sockets: Socket[] = [];
afterEach(() => {
  for (const socket of sockets.splice(0)) socket.destroy();
});

it('2,000 idle sockets from one client: /healthz and a delivery are still answered, and the idle ones are closed by the header timeout', async () => {
  // This process holds its ends of the sockets too.
  expect(openFileLimit()).toBeGreaterThan(IDLE + 200);
  const port = await freePort();
  const prefix = `test-${randomUUID()}`;
  const service = spawnService(
    serviceSettings({
      QUEUE_PREFIX: prefix,
      ROLE: 'web',
      WEB_CONCURRENCY: '2',
      PORT: String(port),
    }),
    {
      command: [
        '/bin/sh',
        '-c',
        `ulimit -n ${OPEN_FILES} && exec "$0" "$1"`,
        process.execPath,
        MAIN,
      ],
    },
  );
  try {
    await withDeadline(service.receiving(2), 30_000, 'the receiver processes');
    await withDeadline(holdIdle(port, IDLE, sockets), 20_000, 'the idle connections');
    const closed = sockets.map((socket) =>
      socket.closed ? Promise.resolve() : new Promise((resolve) => socket.once('close', resolve)),
    );
    for (const socket of sockets) socket.on('error', () => undefined);

    expect(await healthOnNewConnection(port)).toBe(200);
    const delivery = signed(sampleDelivery('key.revoked'));
    const posted = await fetch(`http://127.0.0.1:${port}/webhooks`, {
      method: 'POST',
      headers: delivery.headers,
      body: delivery.raw,
      signal: AbortSignal.timeout(5_000),
    });
    expect(posted.status).toBe(202);
    // None was refused as it arrived: each stays open until the header timeout ends it.
    expect(sockets.filter((socket) => socket.closed)).toHaveLength(0);
    // A hang bound, far past the 20 s header timeout: a loaded machine closes 2,000 sockets late.
    await withDeadline(Promise.all(closed), 90_000, 'the header timeout closing the idle ones');
  } finally {
    for (const socket of sockets.splice(0)) socket.destroy();
    service.child.kill('SIGTERM');
    await withDeadline(service.exited, 30_000, 'the service stopping');
    const redis = new Redis(process.env.REDIS_URL ?? '');
    await deleteKeys(redis, `${prefix}:*`);
    redis.disconnect();
  }
}, 240_000);
