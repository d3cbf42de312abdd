import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { serve, type RunningServer, type ServeOptions } from '../../src/http-server/serve';
import { withDeadline } from '../../src/util/deadline';

it('a request answered at once while the server closes does not throw; the connection closes after the answer in flight', async () => {
  let slowSeen: () => void = () => undefined;
  let answeredAtOnce = false;
  const seen = new Promise<void>((resolve) => (slowSeen = resolve));
  const listener = (req: IncomingMessage, res: ServerResponse) => {
    if (req.url === '/slow') {
      slowSeen();
      req.resume();
      req.once('end', () => res.end('slow'));
    } else {
      // Answered before any other 'request' listener runs.
      answeredAtOnce = true;
      res.end('now');
    }
  };
  const running = await serve(listener, 0, '127.0.0.1');
  const socket = connect(running.port, '127.0.0.1');
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
  socket.write('POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n12345');
  await seen;
  const closed = running.close();
  // The rest of the first body, and a second request pipelined behind it: its 'request' event
  // comes while the server is closing, and its answer is written at once.
  socket.write('67890GET /now HTTP/1.1\r\nHost: x\r\n\r\n');
  await once(socket, 'close');
  await closed;
  expect(answeredAtOnce).toBe(true);
  // The answer in flight says "close" and ends the connection; the pipelined one is not sent,
  // so its client sends it again elsewhere (HTTP/1.1's rule for a closed pipeline).
  const answers = received.split(/(?=HTTP\/1\.1 )/);
  expect(answers).toHaveLength(1);
  expect(answers[0]).toMatch(/^HTTP\/1\.1 200 OK\r\nConnection: close\r\n[\s\S]*\r\n\r\nslow$/);
});

// What the tests below open; a test that fails midway leaves nothing behind for Jest to wait on.
const servers: RunningServer[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function started(
  listener: (req: IncomingMessage, res: ServerResponse) => void,
  options: ServeOptions,
): Promise<RunningServer> {
  const running = await serve(listener, 0, '127.0.0.1', options);
  servers.push(running);
  return running;
}

/** A connection to `running`, resolved once connected. */
function open(running: RunningServer): Promise<Socket> {
  return new Promise((resolve) => {
    const socket = connect(running.port, '127.0.0.1', () => {
      resolve(socket);
    });
    sockets.push(socket);
  });
}

describe('a client too slow to send its request is ended at its deadline, not at Node\u2019s sweep', () => {
  // Deadlines shortened for the test; how often they are checked is what serve() always uses.
  const timeouts = { headersMs: 1_000, requestMs: 1_500 };
  /**
   * Node looks for requests past their deadline every 30 s unless told otherwise; with that, a
   * connection would outlive this bound. A bound on a hang, not a measure of how soon it ends.
   */
  const ENDED_WITHIN_MS = 15_000;

  /** The ms from `start` until the server ended the connection, and what it sent before. */
  async function endedAfter(start: number, socket: Socket): Promise<{ ms: number; sent: string }> {
    let sent = '';
    socket.on('data', (chunk: Buffer) => (sent += chunk.toString()));
    await withDeadline(once(socket, 'close'), ENDED_WITHIN_MS, 'the end of the connection');
    return { ms: Date.now() - start, sent };
  }

  const echo = (req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.once('end', () => res.end('whole'));
  };

  it('headers never finished: 408 or closed, not before headersMs', async () => {
    const running = await started(echo, { timeouts });
    const start = Date.now();
    const socket = await open(running);
    socket.write('POST / HTTP/1.1\r\nHost: x\r\nContent-');
    const { ms, sent } = await endedAfter(start, socket);
    expect(sent).toMatch(/^(HTTP\/1\.1 408 |$)/);
    expect(ms).toBeGreaterThanOrEqual(timeouts.headersMs - 50);
  });

  it('a body trickling in: 408 or closed, not before requestMs', async () => {
    const running = await started(echo, { timeouts });
    const start = Date.now();
    const socket = await open(running);
    socket.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n');
    // One byte of the body every 100 ms: never idle, never done.
    const trickle = setInterval(() => socket.write('x'), 100);
    try {
      const { ms, sent } = await endedAfter(start, socket);
      expect(sent).toMatch(/^(HTTP\/1\.1 408 |$)/);
      expect(ms).toBeGreaterThanOrEqual(timeouts.requestMs - 50);
    } finally {
      clearInterval(trickle);
    }
  });
});

it('MAX_CONNECTIONS: connections past the cap are closed as they arrive; the ones within are served', async () => {
  const running = await started((_req, res) => res.end('ok'), { maxConnections: 2 });
  // The server counts a connection once it has accepted it: wait for both.
  let accepted = 0;
  const both = new Promise<void>((resolve) =>
    running.server.on('connection', () => {
      if (++accepted === 2) resolve();
    }),
  );
  const [first] = [await open(running), await open(running)];
  await withDeadline(both, 5_000, 'two connections accepted');
  const third = await open(running);
  await withDeadline(once(third, 'close'), 5_000, 'the third connection closed');
  let answer = '';
  first.on('data', (chunk: Buffer) => (answer += chunk.toString()));
  first.end('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  await once(first, 'close');
  expect(answer).toMatch(/^HTTP\/1\.1 200 OK[\s\S]*\r\n\r\nok$/);
});
