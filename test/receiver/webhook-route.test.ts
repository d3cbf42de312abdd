import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import request from 'supertest';
import { createReceiver } from '../../src/receiver/receiver';
import { serve } from '../../src/http-server/serve';
import { createLogger } from '../../src/telemetry/logger';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { signPayload } from '../../src/provider-spec/signature';
import {
  createTestReceiver,
  signed,
  TEST_SECRET,
  type TestReceiver,
} from '../helpers/test-receiver';

let logLines: string[];
let receiver: TestReceiver;

beforeEach(async () => {
  logLines = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(chunk.toString());
      done();
    },
  });
  receiver = await createTestReceiver(
    { MAX_BODY_BYTES: '2048' },
    { logger: createLogger('debug', sink) },
  );
});
afterEach(() => receiver.close());

function post(body: unknown, options: { secret?: string; timestamp?: number } = {}) {
  const { raw, headers } = signed(body, options);
  return request(receiver.listener).post('/webhooks').set(headers).send(raw);
}

async function jobs() {
  return receiver.queue.getJobs(['waiting', 'active', 'delayed', 'completed', 'failed']);
}

describe('POST /webhooks', () => {
  it('202: stores a new verified delivery as a job before answering', async () => {
    const delivery = sampleDelivery('audio.ready', { id: 'item-1' });
    const res = await post(delivery).expect(202);
    expect(res.body).toEqual({ received: true, duplicate: false });
    const stored = await jobs();
    expect(stored).toHaveLength(1);
    expect(stored[0]?.name).toBe('audio.ready');
    // The body as sent, byte for byte: not a re-serialised copy.
    expect(stored[0]?.data).toEqual({
      body: JSON.stringify(delivery),
      receivedAt: expect.any(String),
      // The delivery's trace, which its forwards carry (a new one: none came with it).
      traceparent: expect.stringMatching(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/),
    });
  });

  it('200 duplicate: the same event + data.id again, even re-signed later', async () => {
    const delivery = sampleDelivery('audio.failed', { id: 'job-9' });
    await post(delivery).expect(202);
    const later = Math.floor(Date.now() / 1000) + 60;
    const res = await post(delivery, { timestamp: later }).expect(200);
    expect(res.body).toEqual({ received: true, duplicate: true });
    expect(await jobs()).toHaveLength(1);
  });

  it('keeps the same data.id of different events apart', async () => {
    await post(sampleDelivery('audio.ready', { id: 'same' })).expect(202);
    await post(sampleDelivery('audio.failed', { id: 'same' })).expect(202);
    expect(await jobs()).toHaveLength(2);
  });

  it('200 ignored: an unknown event is acknowledged, counted and not queued', async () => {
    const res = await post({ event: 'voice.created', data: { id: 'v1' } }).expect(200);
    expect(res.body).toEqual({ received: true, ignored: true });
    expect(await jobs()).toHaveLength(0);
    expect(
      await receiver.metrics.registry.getSingleMetricAsString('webhook_deliveries_total'),
    ).toMatch(/outcome="ignored"[^\n]* 1/);
  });

  it('accepts a charset parameter on the content type', async () => {
    const { raw, headers } = signed(sampleDelivery('key.revoked'));
    await request(receiver.listener)
      .post('/webhooks')
      .set({ ...headers, 'content-type': 'Application/JSON; charset=utf-8' })
      .send(raw)
      .expect(202);
  });

  describe('401', () => {
    const delivery = sampleDelivery('key.revoked', { id: 'key-1' });
    const raw = JSON.stringify(delivery);
    const at = (offset: number) => ({ timestamp: Math.floor(Date.now() / 1000) + offset });

    it.each([
      ['missing', () => undefined, /missing X-Service-Signature/, 'missing'],
      ['malformed', () => 't=abc,v1=zz', /malformed/, 'malformed'],
      [
        'signed with another secret',
        () => signPayload(raw, 'other'),
        /no signature matched/,
        'mismatch',
      ],
      ['too old', () => signPayload(raw, TEST_SECRET, at(-330)), /outside tolerance/, 'timestamp'],
      [
        'from the future',
        () => signPayload(raw, TEST_SECRET, at(330)),
        /outside tolerance/,
        'timestamp',
      ],
    ])('%s signature', async (_name, makeSignature, detail, reason) => {
      const signature = makeSignature();
      const req = request(receiver.listener)
        .post('/webhooks')
        .set('content-type', 'application/json');
      if (signature !== undefined) req.set('x-service-signature', signature);
      const res = await req.send(raw).expect(401);
      expect(res.body).toEqual({ detail: expect.stringMatching(detail) });
      expect(await jobs()).toHaveLength(0);
      expect(
        await receiver.metrics.registry.getSingleMetricAsString('webhook_signature_failures_total'),
      ).toContain(`reason="${reason}"} 1`);
    });

    it('a tampered body', async () => {
      const { headers } = signed(delivery);
      await request(receiver.listener)
        .post('/webhooks')
        .set(headers)
        .send(raw.replace('key-1', 'key-2'))
        .expect(401);
    });

    it('accepts a secret being rotated in', async () => {
      const rotating = await createTestReceiver({ WEBHOOK_SECRETS: `new-secret,${TEST_SECRET}` });
      try {
        for (const secret of ['new-secret', TEST_SECRET]) {
          const { raw: body, headers } = signed(sampleDelivery('key.revoked'), { secret });
          await request(rotating.app).post('/webhooks').set(headers).send(body).expect(202);
        }
      } finally {
        await rotating.close();
      }
    });
  });

  it.each([
    ['not JSON', 'not json', /not valid UTF-8 JSON/],
    ['no data.id', { event: 'audio.ready', data: {} }, /data.id/],
    [
      'an http audio_url',
      sampleDelivery('audio.ready', { data: { audio_url: 'http://x.example/a.mp3' } }),
      /audio_url/,
    ],
  ])('400: verified, but %s', async (_name, body, detail) => {
    const res = await post(body).expect(400);
    expect(res.body).toEqual({ detail: expect.stringMatching(detail) });
    expect(await jobs()).toHaveLength(0);
  });

  it.each([['text/plain'], ['application/x-www-form-urlencoded'], ['application/jsonp']])(
    '415: Content-Type %s',
    async (type) => {
      const { raw, headers } = signed(sampleDelivery('key.revoked'));
      const res = await request(receiver.listener)
        .post('/webhooks')
        .set({ ...headers, 'content-type': type })
        .send(raw)
        .expect(415);
      expect(res.body).toEqual({ detail: 'Content-Type must be application/json' });
    },
  );

  it('415: no Content-Type at all', async () => {
    await request(receiver.listener).post('/webhooks').send(Buffer.from('{}')).expect(415);
  });

  it('413: body over MAX_BODY_BYTES, declared or streamed', async () => {
    const big = sampleDelivery('audio.failed', { data: { note: 'x'.repeat(4096) } });
    const res = await post(big).expect(413);
    expect(res.body).toEqual({ detail: 'body larger than 2048 bytes' });

    // No Content-Length: the limit must hold while streaming, too.
    const { raw, headers } = signed(big);
    const server = http.createServer(receiver.listener).listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const { port } = server.address() as AddressInfo;
      const req = http.request({
        port,
        host: '127.0.0.1',
        method: 'POST',
        path: '/webhooks',
        headers,
      });
      for (let i = 0; i < raw.length; i += 512) req.write(raw.slice(i, i + 512));
      req.end();
      const [response] = (await once(req, 'response')) as [http.IncomingMessage];
      expect(response.statusCode).toBe(413);
      response.resume();
    } finally {
      server.closeAllConnections();
      server.close();
    }
    expect(await jobs()).toHaveLength(0);
  });

  it.each([['get'], ['put'], ['delete'], ['patch']] as const)(
    '405: %s with Allow: POST',
    async (method) => {
      const res = await request(receiver.listener)[method]('/webhooks').expect(405);
      expect(res.headers.allow).toBe('POST');
      expect(res.body).toEqual({ detail: expect.any(String) });
    },
  );

  it('never logs the signature', async () => {
    const { raw, headers } = signed(sampleDelivery('key.revoked'));
    await request(receiver.listener).post('/webhooks').set(headers).send(raw).expect(202);
    await request(receiver.listener)
      .post('/webhooks')
      .set(headers)
      .set('content-type', 'text/plain')
      .send(raw);
    const digest = headers['x-service-signature'].split('v1=')[1] ?? 'unset';
    // One line per request, carrying the delivery's facts.
    const completed = logLines.filter((line) => line.includes('"msg":"request completed"'));
    expect(completed[0]).toMatch(/"event":"key.revoked".*"duplicate":false/);
    expect(logLines.join('')).not.toContain(digest);
    expect(logLines.join('')).not.toContain(TEST_SECRET);
  });
});

describe('hostile input (regressions)', () => {
  /** `{"event":"audio.failed","data":{"id":…,"extra":[[[…]]]}}`, correctly signed. */
  const nestedBody = (levels: number) =>
    `{"event":"audio.failed","data":{"id":"deep","extra":${'['.repeat(levels)}${']'.repeat(levels)}}}`;

  it('400, not 503: a signed body nested 10,000 deep can never be stored, so it is refused', async () => {
    const roomy = await createTestReceiver();
    try {
      const { raw, headers } = signed(nestedBody(10_000));
      const res = await request(roomy.app).post('/webhooks').set(headers).send(raw).expect(400);
      expect(res.body).toEqual({ detail: expect.stringMatching(/nests deeper than 32 levels/) });
      expect(await roomy.queue.getJobCounts('waiting')).toEqual({ waiting: 0 });
    } finally {
      await roomy.close();
    }
  });

  it('200 ignored, not 400: a signed unknown event nested 10,000 deep is acknowledged, not stored', async () => {
    const roomy = await createTestReceiver();
    try {
      const { raw, headers } = signed(nestedBody(10_000).replace('audio.failed', 'voice.cloned'));
      const res = await request(roomy.listener).post('/webhooks').set(headers).send(raw);
      expect([res.status, res.body]).toEqual([200, { received: true, ignored: true }]);
      expect(await roomy.queue.getJobCounts('waiting')).toEqual({ waiting: 0 });
    } finally {
      await roomy.close();
    }
  });

  it.each([['a\\ud800'], ['a\\udbff'], ['\\udc00b']])(
    '400: an id with a lone surrogate (%s) is not well-formed Unicode',
    async (escaped) => {
      const raw = `{"event":"audio.failed","data":{"id":"${escaped}"}}`;
      const res = await post(raw).expect(400);
      expect(res.body).toEqual({ detail: expect.stringMatching(/well-formed Unicode/) });
      expect(await jobs()).toHaveLength(0);
    },
  );

  it('500, not 503: an unexpected failure of ours is not passed off as storage trouble', async () => {
    // The queue stands in for a defect of ours; the route's mapping is what is under test.
    jest.spyOn(receiver.queue, 'addAfter').mockRejectedValueOnce(new TypeError('a bug'));
    const res = await post(sampleDelivery('key.revoked')).expect(500);
    expect(res.body).toEqual({ detail: 'internal error' });
  });

  describe('Expect: 100-continue', () => {
    let server: Awaited<ReturnType<typeof serve>>;
    let socket: Socket;
    beforeEach(async () => {
      server = await serve(receiver.listener, 0, '127.0.0.1');
      socket = connect(server.port, '127.0.0.1');
      await once(socket, 'connect');
    });
    afterEach(async () => {
      socket.destroy();
      await server.close();
    });

    /** Sends only the head of a POST and resolves with the first bytes the server answers. */
    async function head(headers: Record<string, string | number>): Promise<string> {
      const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}`);
      socket.write(
        ['POST /webhooks HTTP/1.1', 'Host: test', 'Expect: 100-continue', ...lines, '', ''].join(
          '\r\n',
        ),
      );
      const [chunk] = (await once(socket, 'data')) as [Buffer];
      return chunk.toString();
    }

    it('413 without inviting an upload over MAX_BODY_BYTES', async () => {
      const answer = await head({ 'Content-Type': 'application/json', 'Content-Length': 5000 });
      expect(answer).toMatch(/^HTTP\/1\.1 413 /);
      expect(answer).not.toMatch(/100 Continue/);
    });

    it('415 without inviting an upload of the wrong type', async () => {
      const answer = await head({ 'Content-Type': 'text/plain', 'Content-Length': 10 });
      expect(answer).toMatch(/^HTTP\/1\.1 415 /);
    });

    it('100 Continue for an acceptable head, then 202 for the body', async () => {
      const { raw, headers } = signed(sampleDelivery('key.revoked'));
      const answer = await head({
        'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(raw),
        'X-Service-Signature': headers['x-service-signature'],
      });
      expect(answer).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\n$/);
      socket.write(raw);
      const [chunk] = (await once(socket, 'data')) as [Buffer];
      expect(chunk.toString()).toMatch(/^HTTP\/1\.1 202 /);
    });
  });

  it('logs probes at debug and a client error without a stack', async () => {
    await request(receiver.listener).get('/healthz').expect(200);
    await request(receiver.listener).get('/metrics').expect(200);
    await request(receiver.listener).get('/webhooks').expect(405);
    await post('not json').expect(400);
    const lines = logLines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const byUrl = (url: string) =>
      lines.filter((l) => (l.req as { url?: string } | undefined)?.url === url);
    expect(byUrl('/healthz').map((l) => l.level)).toEqual([20]);
    expect(byUrl('/metrics').map((l) => l.level)).toEqual([20]);
    const clientErrors = byUrl('/webhooks');
    expect(clientErrors.map((l) => [l.level, l.detail])).toEqual([
      [30, expect.stringMatching(/method not allowed/)],
      [30, 'body is not valid UTF-8 JSON'],
    ]);
    expect(logLines.join('')).not.toMatch(/"stack"/);
  });
});

describe('secret rotation and clock skew, seen in /metrics', () => {
  it('counts which secret verified and how far the sender clock is off; the timeline numbers secrets as the metric does', async () => {
    const rotating = await createTestReceiver({
      WEBHOOK_SECRETS: `whsec_new,${TEST_SECRET}`,
      ADMIN_PASSWORD: 'rotation test password',
    });
    try {
      const send = (secret: string, timestamp: number, id: string = randomUUID()) => {
        const { raw, headers } = signed(sampleDelivery('key.revoked', { id }), {
          secret,
          timestamp,
        });
        return request(rotating.app).post('/webhooks').set(headers).send(raw).expect(202);
      };
      const now = Math.floor(Date.now() / 1000);
      await send(TEST_SECRET, now - 40, 'rotation-old');
      await send(TEST_SECRET, now - 40);
      await send('whsec_new', now, 'rotation-new');
      const text = (await request(rotating.app).get('/metrics').expect(200)).text;
      expect(text).toContain('webhook_signature_matches_total{secret="0"} 1');
      expect(text).toContain('webhook_signature_matches_total{secret="1"} 2');
      const received = async (id: string) => {
        const res = await request(rotating.app)
          .get(`/admin/api/deliveries/key.revoked/${id}`)
          .auth('admin', 'rotation test password')
          .expect(200);
        return (res.body as { timeline: { detail: string }[] }).timeline[0]?.detail;
      };
      expect(await received('rotation-new')).toMatch(/^signed with WEBHOOK_SECRETS index 0,/);
      expect(await received('rotation-old')).toMatch(/^signed with WEBHOOK_SECRETS index 1,/);
      expect(text).toMatch(/webhook_signature_clock_skew_seconds_bucket\{le="30"\} 1\n/);
      expect(text).toMatch(/webhook_signature_clock_skew_seconds_bucket\{le="60"\} 3\n/);
      expect(text).toMatch(/webhook_signature_clock_skew_seconds_count 3\n/);
    } finally {
      await rotating.close();
    }
  });
});

describe('other routes', () => {
  it('GET /healthz and /readyz answer 200 with Redis up; the public /readyz names no address', async () => {
    await request(receiver.listener).get('/healthz').expect(200, { status: 'ok' });
    const res = await request(receiver.listener).get('/readyz').expect(200);
    expect(res.body).toEqual({ status: 'ready', redis: { topology: 'single' } });
  });

  it("INTERNAL_PORT's /readyz names the Redis server the writes go to", async () => {
    const split = await createTestReceiver({ INTERNAL_PORT: '9464' });
    try {
      const port = new URL(process.env.REDIS_URL ?? '').port;
      if (split.internal === undefined) throw new Error('INTERNAL_PORT builds an internal app');
      const res = await request(split.internal).get('/readyz').expect(200);
      expect(res.body).toEqual({
        status: 'ready',
        redis: { topology: 'single', primary: expect.stringMatching(new RegExp(`:${port}$`)) },
      });
      await request(split.listener).get('/metrics').expect(404);
      await request(split.internal).get('/metrics').expect(200);
    } finally {
      await split.close();
    }
  });

  it('GET /readyz answers 503 once shutdown began', async () => {
    const stopping = createReceiver(receiver.config, createLogger('silent'), {
      isShuttingDown: () => true,
    });
    try {
      await request(stopping.listener).get('/readyz').expect(503, { detail: 'shutting down' });
    } finally {
      await stopping.close();
    }
  });

  it('GET /metrics is Prometheus text with the delivery metrics', async () => {
    await post(sampleDelivery('key.revoked')).expect(202);
    const res = await request(receiver.listener).get('/metrics').expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.text).toMatch(
      /webhook_deliveries_total\{outcome="accepted",event="key.revoked"\} 1/,
    );
    expect(res.text).toMatch(/webhook_enqueue_duration_seconds_count\{result="stored"\} 1/);
    expect(res.text).toMatch(/webhook_queue_jobs\{state="waiting"\} 1/);
    expect(res.text).toMatch(/^webhook_queue_backlog 1$/m);
  });

  it('a scrape asks Redis for the queue counts once, for both queue gauges', async () => {
    const counts = jest.spyOn(receiver.queue, 'getJobCounts');
    try {
      await request(receiver.listener).get('/metrics').expect(200);
      expect(counts).toHaveBeenCalledTimes(1);
      await request(receiver.listener).get('/metrics').expect(200);
      expect(counts).toHaveBeenCalledTimes(2);
    } finally {
      counts.mockRestore();
    }
  });

  it('unknown paths get a JSON 404; helmet headers are on; x-powered-by is off', async () => {
    const res = await request(receiver.listener).get('/nope').expect(404, { detail: 'not found' });
    expect(res.headers['x-powered-by']).toBeUndefined();
    expect(res.headers['x-content-type-options']).toBe('nosniff');
  });
});

describe('the fast path for POST /webhooks', () => {
  /** Status, body and every header but the per-request ones, as a client sees them. */
  const seen = (res: request.Response) => {
    const { date: _date, 'x-request-id': _id, ...headers } = res.headers;
    return { status: res.status, body: res.text, headers };
  };
  /** Each case runs once per path; `round` keeps the two paths' item ids apart. */
  const cases: [string, (target: TestReceiver['listener'], round: string) => request.Test][] = [
    ['accepted', (t, round) => sendSigned(t, sampleDelivery('audio.ready', { id: round }))],
    ['duplicate', (t, round) => sendSigned(t, sampleDelivery('audio.ready', { id: round }))],
    ['ignored', (t) => sendSigned(t, { ...sampleDelivery('key.revoked'), event: 'voice.new' })],
    [
      'bad signature',
      (t) => sendSigned(t, sampleDelivery('key.revoked'), { secret: 'whsec_someone_else' }),
    ],
    ['not JSON', (t) => request(t).post('/webhooks').set('content-type', 'text/plain').send('x')],
    [
      'too large',
      (t) => sendSigned(t, { ...sampleDelivery('key.revoked'), pad: 'x'.repeat(4096) }),
    ],
  ];
  const sendSigned = (
    target: TestReceiver['listener'],
    body: unknown,
    options: { secret?: string } = {},
  ) => {
    const { raw, headers } = signed(body, options);
    return request(target).post('/webhooks').set(headers).send(raw);
  };

  it('answers with the same status, headers and bytes as the Express route', async () => {
    // The same receiver (same Redis prefix): each case goes to Express, then to the fast path.
    const express = receiver.app as unknown as TestReceiver['listener'];
    for (const [name, send] of cases) {
      const viaExpress = seen(await send(express, 'express'));
      const viaFastPath = seen(await send(receiver.listener, 'fast'));
      expect({ name, ...viaFastPath }).toEqual({ name, ...viaExpress });
    }
  });

  it('logs the same one line per request as the Express route', async () => {
    for (const target of [receiver.app as unknown as TestReceiver['listener'], receiver.listener])
      await request(target)
        .post('/webhooks')
        .set('x-request-id', 'same-line')
        .set('content-type', 'text/plain')
        .send('x')
        .expect(415);
    const lines = logLines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => (line.req as { id?: string } | undefined)?.id === 'same-line')
      .map(({ time: _time, responseTime: _rt, ...line }) => line);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toEqual(lines[0]);
  });

  it('leaves the path’s other spellings and methods to Express', async () => {
    await sendSigned(receiver.listener, sampleDelivery('key.revoked')).expect(202);
    const { raw, headers } = signed(sampleDelivery('key.revoked'));
    await request(receiver.listener).post('/webhooks/').set(headers).send(raw).expect(202);
    await request(receiver.listener)
      .post('/webhooks?source=dashboard')
      .set(headers)
      .send(raw)
      .expect(200);
    await request(receiver.listener).get('/webhooks').expect(405);
  });
});
