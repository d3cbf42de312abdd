import {
  createServer,
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { deferContinue } from './request-state.js';

/** The listener could not start; the message names the variable to fix. */
export class ListenError extends Error {
  override name = 'ListenError';
}

/**
 * A failed listen as one line naming the settings to fix: `name` the port's (`PORT`), `hostName`
 * the address's (`HOST`); the sandbox names its own (`SANDBOX_PORT (--port)`).
 */
export function listenProblem(
  error: NodeJS.ErrnoException,
  port: number,
  host: string,
  name: string,
  hostName = 'HOST',
): string {
  switch (error.code) {
    case 'EADDRINUSE':
      return `${name} ${port} is already in use on ${hostName} ${host}: set ${name} to a free port, or stop the other process`;
    case 'EACCES':
      return `${name} ${port} on ${hostName} ${host} needs privileges this process lacks: set ${name} above 1023`;
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
      return `${hostName} ${host} is not an address of this machine: set ${hostName} to one of its addresses, or 0.0.0.0 for all`;
    default:
      return `cannot listen on ${hostName} ${host} ${name} ${port}: ${error.message}`;
  }
}

export interface RunningServer {
  readonly server: Server;
  readonly port: number;
  /** Stops accepting, lets in-flight requests finish, closes every connection, then resolves. */
  close(): Promise<void>;
}

/**
 * Timeouts bound what a client can hold open. The keep-alive timeout outlasts the 60 s idle
 * timeout of common load balancers, so the balancer closes idle connections first and never
 * sends a request down a socket we are closing (the classic intermittent 502). A request must
 * have sent its headers within `headersMs` and all of it within `requestMs`.
 */
export const SERVER_TIMEOUTS = { keepAliveMs: 65_000, headersMs: 20_000, requestMs: 30_000 };

/**
 * How often Node looks for requests past `headersMs` or `requestMs`. Node checks every 30 s
 * unless told otherwise, which lets a slow client hold its connection up to 30 s past its
 * deadline; checking every second ends it within a second of it.
 */
const DEADLINE_CHECK_MS = 1_000;

/**
 * Node's headersTimeout runs from a request's first byte: a connection that sends nothing at all
 * is never timed out, so a client could hold idle sockets (each a file descriptor, each counted
 * against MAX_CONNECTIONS) for ever. Each connection gets `headersMs` to deliver its first
 * request's headers; from then on Node's own deadlines and the keep-alive timeout apply.
 */
function closeSilentConnections(server: Server, headersMs: number): void {
  const awaiting = new WeakMap<Socket, NodeJS.Timeout>();
  server.on('connection', (socket: Socket) => {
    const timer = setTimeout(() => socket.destroy(), headersMs).unref();
    awaiting.set(socket, timer);
    socket.once('close', () => {
      clearTimeout(timer);
    });
  });
  server.on('request', (req: IncomingMessage) => {
    const timer = awaiting.get(req.socket);
    if (timer === undefined) return;
    clearTimeout(timer);
    awaiting.delete(req.socket);
  });
}

export interface ServeOptions {
  /** The variable that names `port`, for the error an operator reads. */
  readonly portName?: string;
  /**
   * Open connections at most (MAX_CONNECTIONS, sized from the open-file limit); more are closed
   * as they arrive. Unset: no cap.
   */
  readonly maxConnections?: number;
  /** The request deadlines, SERVER_TIMEOUTS's unless given (a test shortens them). */
  readonly timeouts?: Partial<Pick<typeof SERVER_TIMEOUTS, 'headersMs' | 'requestMs'>>;
}

export async function serve(
  app: RequestListener,
  port: number,
  host: string,
  { portName = 'PORT', maxConnections, timeouts = {} }: ServeOptions = {},
): Promise<RunningServer> {
  const server = createServer({
    connectionsCheckingInterval: DEADLINE_CHECK_MS,
    headersTimeout: timeouts.headersMs ?? SERVER_TIMEOUTS.headersMs,
    requestTimeout: timeouts.requestMs ?? SERVER_TIMEOUTS.requestMs,
    keepAliveTimeout: SERVER_TIMEOUTS.keepAliveMs,
  });
  deferContinue(server);
  if (maxConnections !== undefined) server.maxConnections = maxConnections;
  closeSilentConnections(server, timeouts.headersMs ?? SERVER_TIMEOUTS.headersMs);

  const inFlight = new Set<ServerResponse>();
  let closing = false;
  // Before the app's own listener: an answer the app writes at once must already say "close".
  server.on('request', (_req, res: ServerResponse) => {
    inFlight.add(res);
    if (closing && !res.headersSent) res.setHeader('Connection', 'close');
    res.on('close', () => {
      inFlight.delete(res);
      // A keep-alive socket that just finished its last answer must not wait for another.
      if (closing) server.closeIdleConnections();
    });
  });

  server.on('request', app);

  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      reject(new ListenError(listenProblem(error, port, host, portName), { cause: error }));
    });
    server.listen(port, host, () => {
      server.removeAllListeners('error');
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
