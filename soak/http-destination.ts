import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { startRequestServer } from '../harness/request-server.js';
import type { ForwardedMessage } from './observations.js';
import { messageOf } from './received-message.js';

/**
 * The team's HTTP endpoint: verifies every forward's Standard Webhooks signature itself (HMAC-SHA256
 * of `<webhook-id>.<webhook-timestamp>.<body>` under FORWARD_SECRET's key, written here and not
 * taken from the library the service signs with), and keeps what it accepted. Its faults:
 * - 503: every request answered 503;
 * - 429: answered 429 with `Retry-After: <retryAfterS>`;
 * - hang: requests read and never answered (until the fault ends: then their sockets are cut);
 * - down: every connection cut as it opens (a destination gone).
 */
export type HttpMode = 'normal' | '503' | '429' | 'hang' | 'down';

export interface HttpDestination {
  readonly url: string;
  /** FORWARD_SECRET. */
  readonly secret: string;
  mode: HttpMode;
  retryAfterS: number;
  readonly received: ForwardedMessage[];
  /** Requests refused for their signature (never expected): what was wrong. */
  readonly badSignatures: string[];
  /** Requests answered or cut, by mode. */
  readonly requests: Record<HttpMode, number>;
  /** Cuts the requests a hang holds. */
  release(): void;
  close(): Promise<void>;
}

const TOLERANCE_S = 300;

/** Why a forward's signature does not verify, or undefined when it does. */
export function signatureProblem(
  key: Buffer,
  headers: IncomingMessage['headers'],
  body: string,
  nowS = Date.now() / 1000,
): string | undefined {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof signatures !== 'string')
    return 'a webhook-* header is missing';
  if (!/^\d+$/.test(timestamp) || Math.abs(nowS - Number(timestamp)) > TOLERANCE_S)
    return `webhook-timestamp ${timestamp} is out of tolerance`;
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
  const matches = signatures.split(' ').some((entry) => {
    const [version, value] = entry.split(',', 2);
    if (version !== 'v1' || value === undefined) return false;
    const given = Buffer.from(value, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  return matches ? undefined : 'no v1 signature matches';
}

export async function startHttpDestination(): Promise<HttpDestination> {
  const key = randomBytes(32);
  const held = new Set<ServerResponse>();
  const destination: HttpDestination = {
    url: '',
    secret: `whsec_${key.toString('base64')}`,
    mode: 'normal',
    retryAfterS: 1,
    received: [],
    badSignatures: [],
    requests: { normal: 0, '503': 0, '429': 0, hang: 0, down: 0 },
    release() {
      for (const res of held) res.socket?.destroy();
      held.clear();
    },
    close: () => Promise.resolve(),
  };
  const server = await startRequestServer((req, res, body) => {
    const mode = destination.mode;
    destination.requests[mode] += 1;
    switch (mode) {
      case 'down':
        res.socket?.destroy();
        return;
      case 'hang':
        held.add(res);
        res.once('close', () => held.delete(res));
        return;
      case '503':
        res.writeHead(503, { 'content-type': 'application/json' }).end('{"detail":"soak"}');
        return;
      case '429':
        res
          .writeHead(429, { 'retry-after': String(destination.retryAfterS) })
          .end('{"detail":"soak: slow down"}');
        return;
      case 'normal':
        break;
    }
    const problem = signatureProblem(key, req.headers, body);
    if (problem !== undefined) {
      destination.badSignatures.push(problem);
      res.writeHead(400).end();
      return;
    }
    destination.received.push(messageOf(String(req.headers['webhook-id']), body));
    res.writeHead(204).end();
  });
  server.server.on('connection', (socket: Socket) => {
    if (destination.mode === 'down') {
      destination.requests.down += 1;
      socket.destroy();
    }
  });
  return Object.assign(destination, { url: server.url, close: server.close });
}
