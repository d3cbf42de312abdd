import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect, nanos, StorageType } from 'nats';
import { freePort } from '../harness/private-redis.js';
import type { ForwardedMessage } from './observations.js';
import { messageOf } from './received-message.js';

/**
 * The JetStream destination: a nats-server of the soak's own (the machine's on 4222 is never
 * stopped), its stream in files under the run's folder so that a stop and a start keep it, and a
 * max_payload of 8 MB: a message near MAX_BODY_BYTES (1 MiB by default) is over NATS's default
 * 1 MB, and a team that accepts such bodies sizes its server for them (the service refuses a
 * message over the server's maximum for good, as docs/forwarding.md says).
 */
export interface NatsBroker {
  /** FORWARD_URLS / FORWARD_CONFIG's URL of the stream's subject. */
  readonly url: string;
  /** SIGTERM and wait (the stream is flushed): the broker stopped. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Every message the stream holds, by sequence. */
  read(): Promise<ForwardedMessage[]>;
  close(): Promise<void>;
}

const STREAM = 'SOAK';
const SUBJECT = 'soak.audio';

export async function startNatsBroker(dir: string): Promise<NatsBroker> {
  const port = await freePort();
  mkdirSync(join(dir, 'store'), { recursive: true });
  const conf = join(dir, 'nats.conf');
  writeFileSync(
    conf,
    `listen: 127.0.0.1:${port}\nmax_payload: 8MB\njetstream { store_dir: "${join(dir, 'store')}" }\n`,
  );
  const server = `127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  const start = async () => {
    if (child !== undefined) return;
    const started = spawn('nats-server', ['-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
    child = started;
    let said = '';
    await new Promise<void>((resolve, reject) => {
      started.stderr.on('data', (chunk: Buffer) => {
        said = (said + chunk.toString()).slice(-4000);
        if (said.includes('Server is ready')) resolve();
      });
      started.once('exit', (code) => {
        child = undefined;
        reject(new Error(`nats-server exited (${String(code)}): ${said}`));
      });
    });
  };
  const stop = async () => {
    const running = child;
    if (running === undefined) return;
    running.removeAllListeners('exit');
    const exited = once(running, 'exit');
    running.kill('SIGTERM');
    await exited;
    child = undefined;
  };
  await start();
  const nc = await connect({ servers: server });
  const jsm = await nc.jetstreamManager();
  await jsm.streams.add({
    name: STREAM,
    subjects: [SUBJECT],
    storage: StorageType.File,
    duplicate_window: nanos(120_000),
  });
  await nc.close();
  return {
    url: `nats://${server}/${SUBJECT}`,
    stop,
    start,
    async read() {
      const reader = await connect({ servers: server, timeout: 10_000 });
      try {
        const manager = await reader.jetstreamManager();
        const {
          first_seq: first,
          last_seq: last,
          messages,
        } = (await manager.streams.info(STREAM)).state;
        const found: ForwardedMessage[] = [];
        for (let seq = first; messages > 0 && seq <= last; seq += 1) {
          const message = await manager.streams.getMessage(STREAM, { seq }).catch(() => undefined);
          if (message !== undefined)
            found.push(messageOf(message.header.get('Nats-Msg-Id'), message.string()));
        }
        return found;
      } finally {
        await reader.close();
      }
    },
    close: stop,
  };
}
