import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A destination's HTTP server on a private port: where forwards go, and how it ends. */
export interface RequestServer {
  /** `http://127.0.0.1:<port>/hooks/audio`. */
  readonly url: string;
  /** The server itself, for a listener of its own (a connection cut as it opens). */
  readonly server: Server;
  /** Stops listening and cuts every connection, a request held open included. */
  readonly close: () => Promise<void>;
}

/**
 * Starts a server on 127.0.0.1 that reads each request's body whole (UTF-8) and hands it to
 * `answer`, which answers or holds the response: the HTTP endpoint of the tests and the bench
 * (forward-destinations.ts) and the soak's (soak/http-destination.ts).
 */
export async function startRequestServer(
  answer: (req: IncomingMessage, res: ServerResponse, body: string) => void,
): Promise<RequestServer> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      answer(req, res, Buffer.concat(chunks).toString('utf8'));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks/audio`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
        server.closeAllConnections();
      }),
  };
}
