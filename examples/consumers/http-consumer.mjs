// A consumer of the receiver's HTTP forwards (docs/forwarding.md, "Consumers"): it verifies each
// message's Standard Webhooks signature and acts on each message id once. Start it first, then
// the service with FORWARD_URLS=http://127.0.0.1:8080/audio and the same FORWARD_SECRET:
//
//   FORWARD_SECRET=whsec_... node examples/consumers/http-consumer.mjs
//
// CONSUMER_HOST and CONSUMER_PORT (default 127.0.0.1 and 8080) say where it listens.
import { Buffer } from 'node:buffer';
import { createServer } from 'node:http';
import process from 'node:process';
import { Webhook } from 'standardwebhooks';

const secret = process.env.FORWARD_SECRET;
if (!secret) {
  process.stderr.write(
    'http-consumer: set FORWARD_SECRET to the whsec_ key the receiver signs with\n',
  );
  process.exit(2);
}
const host = process.env.CONSUMER_HOST ?? '127.0.0.1';
const port = Number(process.env.CONSUMER_PORT ?? 8080);
const verifier = new Webhook(secret);
// At least once: a message may come again. Use your database here (an upsert keyed on the id).
const seen = new Set();

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    // The signature covers the bytes as sent: verify them before parsing.
    const body = Buffer.concat(chunks).toString('utf8');
    let message;
    try {
      // Throws on a bad signature or a timestamp more than 5 minutes off.
      message = verifier.verify(body, req.headers);
    } catch (error) {
      process.stderr.write(`http-consumer: refused: ${error.message}\n`);
      res.writeHead(400).end();
      return;
    }
    const id = req.headers['webhook-id'];
    if (!seen.has(id)) {
      seen.add(id);
      process.stdout.write(`${id} ${message.type} ${message.id} ${message.stored?.name ?? '-'}\n`);
    }
    // Any 2xx is "taken"; anything else is sent again later.
    res.writeHead(204).end();
  });
});
server.listen(port, host, () => {
  process.stdout.write(`http-consumer: listening on http://${host}:${port}/\n`);
});
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    server.close();
    server.closeAllConnections();
  });
}
