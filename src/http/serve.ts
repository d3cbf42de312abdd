import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';

export interface RunningServer {
  readonly server: Server;
  readonly port: number;
  /** Stops accepting, lets in-flight requests finish, closes every connection, then resolves. */
  close(): Promise<void>;
}

/**
 * Timeouts bound what a client can hold open. The keep-alive timeout outlasts the 60 s idle
 * timeout of common load balancers, so the balancer closes idle connections first and never
 * sends a request down a socket we are closing (the classic intermittent 502).
 */
export const SERVER_TIMEOUTS = { keepAliveMs: 65_000, headersMs: 20_000, requestMs: 30_000 };

export async function serve(app: Express, port: number, host: string): Promise<RunningServer> {
  const server = createServer(app);
  server.keepAliveTimeout = SERVER_TIMEOUTS.keepAliveMs;
  server.headersTimeout = SERVER_TIMEOUTS.headersMs;
  server.requestTimeout = SERVER_TIMEOUTS.requestMs;

  const inFlight = new Set<ServerResponse>();
  let closing = false;
  server.on('request', (_req, res: ServerResponse) => {
    inFlight.add(res);
    if (closing) res.setHeader('Connection', 'close');
    res.on('close', () => {
      inFlight.delete(res);
      // A keep-alive socket that just finished its last answer must not wait for another.
      if (closing) server.closeIdleConnections();
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });

  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        closing = true;
        for (const res of inFlight) if (!res.headersSent) res.setHeader('Connection', 'close');
        server.close((error) => {
          if (error) reject(error);
          else resolve();
        });
        server.closeIdleConnections();
      }),
  };
}
