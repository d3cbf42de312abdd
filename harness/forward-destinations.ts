import { createPublicKey, generateKeyPairSync, randomBytes, verify } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import {
  createJetStream,
  createRabbitQueue,
  type JetStream,
  type RabbitQueue,
} from './broker-destinations';
import { Inbox, type Received } from './inbox';
import { startRequestServer } from './request-server';

export function forwardSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * A FORWARD_SIGNING_KEY and the public key a consumer verifies with, made with node:crypto's own
 * Ed25519 key pair (not the service's code): `whsk_` + the seed, `whpk_` + the public key.
 */
export function forwardKeyPair(): { signingKey: string; publicKey: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const raw = (jwk: string | undefined) => Buffer.from(jwk ?? '', 'base64url').toString('base64');
  return {
    signingKey: `whsk_${raw(privateKey.export({ format: 'jwk' }).d)}`,
    publicKey: `whpk_${raw(publicKey.export({ format: 'jwk' }).x)}`,
  };
}

/** What an endpoint checks a forward with: the secret (`v1`), public keys (`v1a`), or both. */
export interface ForwardVerifier {
  readonly secret?: string;
  readonly publicKeys?: readonly string[];
}

/**
 * Standard Webhooks `v1a`, verified as a consumer holding only public keys does: one entry
 * of the header verifies under one of the keys, over `<id>.<timestamp>.<body>`, with the
 * timestamp within 5 minutes. Throws otherwise.
 */
export function verifyV1a(
  publicKeys: readonly string[],
  body: string,
  headers: Readonly<Record<string, string | string[] | undefined>>,
): void {
  const header = (name: string) => {
    const value = headers[name];
    return typeof value === 'string' ? value : '';
  };
  const timestamp = Number(header('webhook-timestamp'));
  if (!(Math.abs(Date.now() / 1000 - timestamp) <= 300)) throw new Error('v1a: timestamp off');
  const signed = Buffer.from(`${header('webhook-id')}.${header('webhook-timestamp')}.${body}`);
  const keys = publicKeys.map((key) =>
    createPublicKey({
      key: {
        kty: 'OKP',
        crv: 'Ed25519',
        x: Buffer.from(key.replace(/^whpk_/, ''), 'base64').toString('base64url'),
      },
      format: 'jwk',
    }),
  );
  const entries = header('webhook-signature')
    .split(' ')
    .filter((entry) => entry.startsWith('v1a,'))
    .map((entry) => Buffer.from(entry.slice(4), 'base64'));
  if (!entries.some((signature) => keys.some((key) => verify(null, signed, key, signature))))
    throw new Error('v1a: no signature verifies');
}

export interface HttpEndpoint {
  readonly url: string;
  readonly inbox: Inbox;
  /** Requests whose signature did not verify (never expected). */
  readonly rejected: string[];
  /** While set, every request is answered 503 (and not put in the inbox). */
  failing: boolean;
  /** The next this many requests are answered 503. */
  failNext: number;
  /** Every request seen, answered or refused. */
  requests: number;
  /** When each request arrived (Date.now()), answered or refused. */
  readonly arrivals: number[];
  /** When set, answers a request its way instead (not put in the inbox): a 429, a 503. */
  refuse: (() => { status: number; headers?: Record<string, string> } | undefined) | undefined;
  close(): Promise<void>;
}

/**
 * A consumer's HTTP endpoint that verifies each forward: `v1` with the `standardwebhooks`
 * library when given the secret (a string is the secret), `v1a` with the public keys when given
 * them; both when given both.
 */
export async function startHttpEndpoint(keys: string | ForwardVerifier): Promise<HttpEndpoint> {
  const { secret, publicKeys } =
    typeof keys === 'string' ? { secret: keys, publicKeys: undefined } : keys;
  const verifier = secret === undefined ? undefined : new Webhook(secret);
  const inbox = new Inbox('the HTTP endpoint');
  const endpoint: HttpEndpoint = {
    url: '',
    inbox,
    rejected: [],
    failing: false,
    failNext: 0,
    requests: 0,
    arrivals: [],
    refuse: undefined,
    close: () => Promise.resolve(),
  };
  const server = await startRequestServer((req, res, body) => {
    endpoint.requests += 1;
    endpoint.arrivals.push(Date.now());
    const refusal = endpoint.refuse?.();
    if (refusal !== undefined) {
      res.writeHead(refusal.status, refusal.headers).end();
      return;
    }
    const failedNow = endpoint.failNext > 0;
    if (failedNow) endpoint.failNext -= 1;
    if (endpoint.failing || failedNow) {
      res.writeHead(503).end();
      return;
    }
    try {
      verifier?.verify(body, req.headers as Record<string, string>);
      if (publicKeys !== undefined) verifyV1a(publicKeys, body, req.headers);
    } catch (error: unknown) {
      endpoint.rejected.push(String(error));
      res.writeHead(400).end();
      return;
    }
    inbox.push({
      id: String(req.headers['webhook-id']),
      traceparent: String(req.headers.traceparent),
      signature: String(req.headers['webhook-signature']),
      body: JSON.parse(body) as Received['body'],
    });
    res.writeHead(204).end();
  });
  return Object.assign(endpoint, { url: server.url, close: server.close });
}

export interface ThreeDestinations {
  readonly endpoint: HttpEndpoint;
  readonly stream: JetStream;
  readonly rabbit: RabbitQueue;
  /** FORWARD_URLS and FORWARD_SECRET for a service forwarding to all three. */
  readonly env: { readonly FORWARD_URLS: string; readonly FORWARD_SECRET: string };
  close(): Promise<void>;
}

/**
 * One destination of each kind, with a secret of their own: an HTTP endpoint, a stream on
 * `natsServer` (the machine's NATS unless a private one is named) and a RabbitMQ queue.
 */
export async function startThreeDestinations(
  natsServer?: string,
  streamOptions?: { consume?: boolean },
  queueOptions?: { consume?: boolean },
): Promise<ThreeDestinations> {
  const secret = forwardSecret();
  const [endpoint, stream, rabbit] = await Promise.all([
    startHttpEndpoint(secret),
    createJetStream(natsServer, streamOptions),
    createRabbitQueue(queueOptions),
  ]);
  return {
    endpoint,
    stream,
    rabbit,
    env: { FORWARD_URLS: [endpoint.url, stream.url, rabbit.url].join(','), FORWARD_SECRET: secret },
    async close() {
      await Promise.all([endpoint.close(), stream.close(), rabbit.close()]);
    },
  };
}
