import { connect, createServer, type Socket } from 'node:net';
import { freePort } from '../../../harness/private-redis';
import { afterTest } from '../after-test';

export interface StallingProxy {
  /** redis://127.0.0.1:<port>: the proxy, for the process under test. */
  readonly url: string;
  /**
   * From now on, what clients send is held, not passed on (Redis's answers still flow); resolves
   * once what a client sent while held contains `text` (a delivery's id, say): that command is
   * then certainly waiting on Redis.
   */
  stall(text: string): Promise<void>;
  /**
   * Passes on what was held, in order, and everything after it; as TCP would, even for a client
   * gone meanwhile (what it sent reaches Redis before its close).
   */
  release(): void;
}

/**
 * A TCP proxy in front of a Redis that can hold every command sent through it: a Redis that
 * stalls, with the test knowing the moment a given command is stuck in it (a frozen server gives
 * no such moment). Stopped when the test ends.
 */
export async function startStallingProxy(target: URL): Promise<StallingProxy> {
  const port = await freePort();
  /** While stalled: each client's held bytes and whether it closed meanwhile. */
  let held: Map<Socket, { chunks: Buffer[]; ended: boolean }> | undefined;
  let waitingFor: { text: string; resolve: () => void } | undefined;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
      socket.on('close', () => sockets.delete(socket));
    }
    upstream.pipe(client);
    client.on('data', (chunk: Buffer) => {
      if (held === undefined) {
        upstream.write(chunk);
        return;
      }
      const mine = held.get(upstream) ?? { chunks: [], ended: false };
      held.set(upstream, mine);
      mine.chunks.push(chunk);
      if (waitingFor !== undefined && Buffer.concat(mine.chunks).includes(waitingFor.text)) {
        waitingFor.resolve();
        waitingFor = undefined;
      }
    });
    client.on('end', () => {
      const mine = held?.get(upstream);
      if (mine === undefined) upstream.end();
      else mine.ended = true;
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  afterTest(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return {
    url: `redis://127.0.0.1:${String(port)}`,
    stall(text) {
      held = new Map();
      return new Promise((resolve) => {
        waitingFor = { text, resolve };
      });
    },
    release() {
      const waiting = held ?? new Map<Socket, { chunks: Buffer[]; ended: boolean }>();
      held = undefined;
      for (const [upstream, { chunks, ended }] of waiting) {
        for (const chunk of chunks) upstream.write(chunk);
        if (ended) upstream.end();
      }
    },
  };
}
