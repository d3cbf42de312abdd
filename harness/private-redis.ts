import { spawn, type ChildProcess } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join } from 'node:path';

export const HOW_TO_PROVIDE_REDIS =
  'the tests need Redis: set REDIS_URL=redis://host:port, or put redis-server on PATH ' +
  '(Debian/Ubuntu: apt-get install redis-server) so the tests can start a private one';

export interface PrivateRedis {
  readonly url: string;
  readonly port: number;
  /** Stops the server and waits for it to exit; everything it held is gone (no persistence). */
  stop(): Promise<void>;
  /** Starts it again on the same port. */
  start(): Promise<void>;
  /** SIGSTOP / SIGCONT: a server that keeps its connections but answers nothing. */
  freeze(): void;
  thaw(): void;
}

/**
 * Each Jest worker hands out ports from a range of its own, below the OS's ephemeral ports
 * (32768 up on Linux): workers running at once never hand out the same port, and no socket the
 * OS numbers (an outgoing connection, a `listen(0)`) takes one between its check and its use.
 * Within a worker, ports go in turn, so a port just closed is not handed out again soon.
 */
const RANGE = 1000;
const FIRST = 20_000 + (Number(process.env.JEST_WORKER_ID ?? '1') - 1) * RANGE;
// From a random place in the range: two suites run at once on one machine (two clones, say)
// have workers of the same numbers, and from the same place they met on the same ports.
let nextPort = FIRST + randomInt(RANGE);

/** Whether nothing listens on 127.0.0.1:`port` now. */
function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => {
      resolve(false);
    });
    server.listen(port, '127.0.0.1', () =>
      server.close(() => {
        resolve(true);
      }),
    );
  });
}

/** A free loopback port of this worker's range. */
export async function freePort(): Promise<number> {
  for (let tried = 0; tried < RANGE; tried += 1) {
    const port = nextPort;
    nextPort = nextPort + 1 === FIRST + RANGE ? FIRST : nextPort + 1;
    if (await isFree(port)) return port;
  }
  throw new Error(`no free port in ${String(FIRST)}–${String(FIRST + RANGE - 1)}`);
}

/** Append-only file fsynced every second, as docker-compose.yml runs Redis in production. */
const PERSISTENT = ['--appendonly', 'yes', '--appendfsync', 'everysec'];

function launch(
  command: string,
  port: number,
  dir: string,
  persistent: boolean,
  extra: readonly string[] = [],
): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const args = [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--dir',
      dir,
      ...(persistent ? PERSISTENT : ['--appendonly', 'no']),
      ...extra,
    ];
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Ready to accept connections')) {
        child.stdout.off('data', onData);
        child.stdout.resume();
        resolve(child);
      }
    };
    child.stdout.on('data', onData);
    child.once('error', (error: NodeJS.ErrnoException) => {
      reject(error.code === 'ENOENT' ? new Error(HOW_TO_PROVIDE_REDIS, { cause: error }) : error);
    });
    child.once('exit', (code) => {
      reject(new Error(`redis-server exited with ${code}: ${output}`));
    });
  });
}

/** A redis-server of the test's own on a free loopback port: safe to stop on purpose. */
export async function startPrivateRedis({
  persistent = false,
  /** The server binary; found on PATH by default. */
  command = 'redis-server',
  /** More arguments, e.g. `--replicaof 127.0.0.1 <port>`. */
  args = [] as readonly string[],
} = {}): Promise<PrivateRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'aw-redis-'));
  let child: ChildProcess | undefined = await launch(command, port, dir, persistent, args);
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    async stop() {
      const running = child;
      child = undefined;
      if (!running || running.exitCode !== null) return;
      running.removeAllListeners('exit');
      await new Promise<void>((resolve) => {
        running.once('exit', () => {
          resolve();
        });
        running.kill('SIGKILL');
      });
    },
    async start() {
      child ??= await launch(command, port, dir, persistent, args);
    },
    freeze: () => child?.kill('SIGSTOP'),
    thaw: () => child?.kill('SIGCONT'),
  };
}

/**
 * Resolves once `client` (an ioredis client that is reconnecting) is ready, within `timeoutMs`.
 * Not `events.once(client, 'ready')`: that rejects on the first 'error', and a reconnect attempt
 * made just before a restarted server listened can report its ECONNREFUSED after `start()` has
 * resolved (CI saw it once: the outage test failed with "connect ECONNREFUSED").
 */
export function whenReady(
  client: { readonly status: string } & Pick<NodeJS.EventEmitter, 'once' | 'off'>,
  timeoutMs = 10_000,
): Promise<void> {
  if (client.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onReady = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      client.off('ready', onReady);
      reject(new Error(`Redis client not ready after ${timeoutMs} ms (status ${client.status})`));
    }, timeoutMs);
    // A deadline keeps nothing alive: a waiter that lost a race would otherwise hold the
    // Jest worker open until it fires.
    timer.unref();
    client.once('ready', onReady);
  });
}

/** A Sentinel of the test's own watching `primaryPort` as `mymaster` (1 s to call it down). */
export async function startPrivateSentinel(
  primaryPort: number,
  quorum = 1,
): Promise<{
  readonly port: number;
  stop(): Promise<void>;
}> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'aw-sentinel-'));
  const conf = join(dir, 'sentinel.conf');
  writeFileSync(
    conf,
    [
      `port ${port}`,
      'bind 127.0.0.1',
      `dir ${dir}`,
      `sentinel monitor mymaster 127.0.0.1 ${primaryPort} ${quorum}`,
      'sentinel down-after-milliseconds mymaster 1000',
      'sentinel failover-timeout mymaster 5000',
      '',
    ].join('\n'),
  );
  const child = spawn('redis-server', [conf, '--sentinel'], { stdio: ['ignore', 'pipe', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('+monitor master')) resolve();
    });
    child.once('exit', (code) => {
      reject(new Error(`sentinel exited with ${code}: ${output}`));
    });
  });
  return {
    port,
    async stop() {
      if (child.exitCode !== null) return;
      child.removeAllListeners('exit');
      await new Promise<void>((resolve) => {
        child.once('exit', () => {
          resolve();
        });
        child.kill('SIGKILL');
      });
    },
  };
}
