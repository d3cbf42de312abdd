// A consumer of the receiver's HTTP forwards (docs/forwarding.md, "Consumers"): it verifies each
// message's Standard Webhooks signature, acts on each message id once, and continues the
// delivery's trace (tracing.mjs). Start it first, then the service with
// FORWARD_URLS=http://127.0.0.1:8080/audio. It verifies with the public key of the service's
// FORWARD_SIGNING_KEY (`npx audio-webhooks forward public-key` prints it), holding no secret:
//
//   FORWARD_PUBLIC_KEY=whpk_... node examples/consumers/http-consumer.mjs
//
// or, without a public key, with the service's FORWARD_SECRET (FORWARD_SECRET=whsec_...).
// FORWARD_PUBLIC_KEY may list several keys, comma-separated (while the service's key is rotated).
// CONSUMER_HOST and CONSUMER_PORT (default 127.0.0.1 and 8080) say where it listens.
import { Buffer } from 'node:buffer';
import { createPublicKey, verify } from 'node:crypto';
import { createServer } from 'node:http';
import process from 'node:process';
import { Webhook } from 'standardwebhooks';
import { startTracing } from './tracing.mjs';

const publicKeys = (process.env.FORWARD_PUBLIC_KEY ?? '')
  .split(',')
  .map((key) => key.trim())
  .filter((key) => key !== '')
  .map(publicKeyOf);
const secret = process.env.FORWARD_SECRET;
if (publicKeys.length === 0 && !secret) {
  process.stderr.write(
    'http-consumer: set FORWARD_PUBLIC_KEY to the whpk_ key `audio-webhooks forward public-key` prints (or FORWARD_SECRET to the whsec_ key the receiver signs with)\n',
  );
  process.exit(2);
}
const host = process.env.CONSUMER_HOST ?? '127.0.0.1';
const port = Number(process.env.CONSUMER_PORT ?? 8080);
// With a public key, `v1a` (Ed25519); else `v1` (HMAC) with the shared secret.
const hmac = publicKeys.length > 0 ? undefined : new Webhook(secret);
const check = (body, headers) => hmac?.verify(body, headers) ?? verifyV1a(body, headers);
const tracing = await startTracing('http-consumer');
// At least once: a message may come again. Use your database here (an upsert keyed on the id).
const seen = new Set();

/** A `whpk_<base64 of a 32-byte Ed25519 public key>` as a key node:crypto verifies with. */
function publicKeyOf(text) {
  const raw = Buffer.from(text.replace(/^whpk_/, ''), 'base64');
  if (!text.startsWith('whpk_') || raw.length !== 32 || raw.toString('base64') !== text.slice(5)) {
    process.stderr.write(
      'http-consumer: FORWARD_PUBLIC_KEY must be whpk_ and the base64 of 32 bytes\n',
    );
    process.exit(2);
  }
  return createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') },
    format: 'jwk',
  });
}

/**
 * Standard Webhooks `v1a`: one of the header's space-separated entries is `v1a,<base64 Ed25519
 * signature>` of "<webhook-id>.<webhook-timestamp>.<body>" under one of the public keys, and the
 * timestamp is within 5 minutes. (The `standardwebhooks` package verifies `v1` only.) Returns
 * the parsed body; throws otherwise.
 */
function verifyV1a(body, headers) {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signature = headers['webhook-signature'];
  if (
    typeof id !== 'string' ||
    typeof signature !== 'string' ||
    !/^\d{1,12}$/.test(timestamp ?? '')
  )
    throw new Error('missing or malformed webhook-id, webhook-timestamp or webhook-signature');
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > 300)
    throw new Error('webhook-timestamp is more than 5 minutes off');
  const signed = Buffer.from(`${id}.${timestamp}.${body}`);
  for (const entry of signature.split(' ')) {
    if (!entry.startsWith('v1a,')) continue;
    const bytes = Buffer.from(entry.slice('v1a,'.length), 'base64');
    if (bytes.length === 64 && publicKeys.some((key) => verify(null, signed, key, bytes)))
      return JSON.parse(body);
  }
  throw new Error('no v1a signature verifies under FORWARD_PUBLIC_KEY');
}

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    // The signature covers the bytes as sent: verify them before parsing.
    const body = Buffer.concat(chunks).toString('utf8');
    let message;
    try {
      message = check(body, req.headers);
    } catch (error) {
      process.stderr.write(`http-consumer: refused: ${error.message}\n`);
      res.writeHead(400).end();
      return;
    }
    const id = req.headers['webhook-id'];
    void tracing.consume(
      'consume audio-webhooks forward',
      req.headers.traceparent,
      async (traceId) => {
        if (!seen.has(id)) {
          seen.add(id);
          // The trace id last: the delivery's, the one the receiver's inspector shows.
          process.stdout.write(
            `${id} ${message.type} ${message.id} ${message.stored?.name ?? '-'} ${traceId}\n`,
          );
        }
        // Any 2xx is "taken"; anything else is sent again later.
        res.writeHead(204).end();
      },
    );
  });
});
server.listen(port, host, () => {
  process.stdout.write(`http-consumer: listening on http://${host}:${port}/\n`);
});
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    server.close();
    server.closeAllConnections();
    // Spans still buffered are exported before the process ends.
    void tracing.shutdown();
  });
}
