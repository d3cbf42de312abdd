import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { freePort } from '../harness/private-redis.js';

/**
 * A redis-server of the soak's own, on a free loopback port, its files in `dir`. The service's is
 * persistent as production runs it (docker-compose.yml): the append-only file, fsynced `always`
 * (before each write is acknowledged: a power loss loses nothing acknowledged, if the disk honours
 * fsync) or `everysec` (once a second: a process killed loses nothing, since each write reaches
 * the kernel before its reply, but a power loss may lose the last second or two), no RDB
 * snapshots, `noeviction`. Killed with SIGKILL, it is started again from that file.
 */
export type Fsync = 'always' | 'everysec';

export interface RedisServer {
  readonly url: string;
  readonly port: number;
  pid(): number | undefined;
  /** SIGKILL, and wait for the exit. */
  kill(): Promise<void>;
  /** Starts it (again: from the append-only file) and waits until it accepts connections. */
  start(): Promise<void>;
  /** SIGSTOP / SIGCONT: it keeps its connections and answers nothing. */
  pause(): void;
  resume(): void;
}

export async function startRedisServer(
  dir: string,
  persistence: Fsync | 'none',
  /** More arguments (a Cluster node's). */
  extra: readonly string[] = [],
): Promise<RedisServer> {
  const port = await freePort();
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    '--maxmemory-policy',
    'noeviction',
    ...(persistence === 'none'
      ? ['--appendonly', 'no']
      : ['--appendonly', 'yes', '--appendfsync', persistence]),
    ...extra,
  ];
  let child: ChildProcess | undefined;
  const start = async () => {
    if (child !== undefined) return;
    const started = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child = started;
    let output = '';
    await new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        output = (output + chunk.toString()).slice(-8000);
        if (output.includes('Ready to accept connections')) {
          started.stdout.off('data', onData);
          started.stdout.resume();
          resolve();
        }
      };
      started.stdout.on('data', onData);
      started.once('exit', (code) => {
        child = undefined;
        reject(new Error(`redis-server exited (${String(code)}): ${output}`));
      });
    });
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    pid: () => child?.pid,
    async kill() {
      const running = child;
      if (running === undefined) return;
      running.removeAllListeners('exit');
      const exited = once(running, 'exit');
      running.kill('SIGCONT');
      running.kill('SIGKILL');
      await exited;
      child = undefined;
    },
    start,
    pause: () => child?.kill('SIGSTOP'),
    resume: () => child?.kill('SIGCONT'),
  };
}
