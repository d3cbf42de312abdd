import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { serve } from '../../src/http/serve';

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
