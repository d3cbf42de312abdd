import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type Route = (req: IncomingMessage, res: ServerResponse, hit: number) => void;

export interface LocalCdn {
  /** `https://127.0.0.1:<port>` */
  readonly origin: string;
  /** `https://localhost:<port>`: the same server by name, for the DNS path of the SSRF guard. */
  readonly namedOrigin: string;
  /** The self-signed certificate (PEM) the downloader must be told to trust. */
  readonly ca: string;
  /** Requests per path. */
  readonly hits: Map<string, number>;
  route(path: string, handler: Route): void;
  /** Answers every path without a route of its own. */
  fallback(handler: Route): void;
  close(): Promise<void>;
}

let certificate: { key: string; cert: string } | undefined;

/** One certificate per test process, for 127.0.0.1 and localhost, made with openssl. */
function testCertificate(): { key: string; cert: string } {
  if (certificate) return certificate;
  const dir = mkdtempSync(join(tmpdir(), 'aw-cdn-'));
  const key = join(dir, 'key.pem');
  const cert = join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '2',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
    ],
    { stdio: 'ignore' },
  );
  certificate = { key: readFileSync(key, 'utf8'), cert: readFileSync(cert, 'utf8') };
  return certificate;
}

/** A real HTTPS server on loopback, standing in for the provider's CDN. */
export async function startLocalCdn(): Promise<LocalCdn> {
  const { key, cert } = testCertificate();
  const routes = new Map<string, Route>();
  let fallback: Route | undefined;
  const hits = new Map<string, number>();
  const sockets = new Set<Socket>();
  const server: Server = createServer({ key, cert }, (req, res) => {
    const path = new URL(req.url ?? '/', 'https://x').pathname;
    const hit = (hits.get(path) ?? 0) + 1;
    hits.set(path, hit);
    const route = routes.get(path) ?? fallback;
    if (route) route(req, res, hit);
    else res.writeHead(404).end('not found');
  });
  server.on('secureConnection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `https://127.0.0.1:${port}`,
    namedOrigin: `https://localhost:${port}`,
    ca: cert,
    hits,
    route: (path, handler) => routes.set(path, handler),
    fallback: (handler) => {
      fallback = handler;
    },
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => {
          resolve();
        });
      }),
  };
}

/** Serves `body` as audio. */
export function audio(body: Buffer, type = 'audio/mpeg'): Route {
  return (_req, res) =>
    res.writeHead(200, { 'content-type': type, 'content-length': body.length }).end(body);
}
