import { randomBytes, randomUUID } from 'node:crypto';
import request from 'supertest';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import {
  forwardKeyPair,
  forwardSecret,
  startHttpEndpoint,
  startThreeDestinations,
  verifyV1a,
  type HttpEndpoint,
} from '../../harness/forward-destinations';
import type { Received } from '../../harness/inbox';
import { startTestPipeline, type TestPipeline } from '../helpers/test-pipeline';

// FORWARD_SIGNING_KEY's `v1a` signatures, verified with the public key alone, and the W3C trace
// context every forward carries, with tracing off (no OTEL_EXPORTER_OTLP_ENDPOINT; tracing.test.ts
// has it on), against an HTTP endpoint and the machine's NATS and RabbitMQ.
const PASSWORD = 'inspector-password';
const running: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const part of running.splice(0).reverse()) await part.close();
});

async function pipelineTo(workerEnv: Record<string, string>): Promise<TestPipeline> {
  const pipeline = await startTestPipeline({ ADMIN_PASSWORD: PASSWORD }, undefined, workerEnv);
  running.push(pipeline);
  return pipeline;
}

async function endpointFor(keys: Parameters<typeof startHttpEndpoint>[0]): Promise<HttpEndpoint> {
  const endpoint = await startHttpEndpoint(keys);
  running.push(endpoint);
  return endpoint;
}

/** The trace id of a `traceparent` the destination received, after checking its form. */
function traceIdOf(message: Received | undefined): string {
  expect(message?.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/);
  return message?.traceparent?.slice(3, 35) ?? '';
}

/** The inspector API's detail of a key.revoked delivery. */
async function detail(pipeline: TestPipeline, id: string): Promise<Record<string, unknown>> {
  const answer = await request(pipeline.receiver.listener)
    .get(`/admin/api/deliveries/key.revoked/${encodeURIComponent(id)}`)
    .auth('admin', PASSWORD)
    .expect(200);
  return answer.body as Record<string, unknown>;
}

describe('FORWARD_SIGNING_KEY', () => {
  it('alone: every HTTP forward carries one v1a entry that verifies under the key `forward public-key` prints', async () => {
    const { signingKey, publicKey } = forwardKeyPair();
    // The endpoint verifies with the public key only: no secret is shared with it.
    const endpoint = await endpointFor({ publicKeys: [publicKey] });
    const pipeline = await pipelineTo({
      FORWARD_URLS: endpoint.url,
      FORWARD_SIGNING_KEY: signingKey,
    });
    const printed = await pipeline.cli('forward', 'public-key');
    expect(printed).toEqual({ code: 0, stdout: `${publicKey}\n`, stderr: '' });
    const id = `v1a-${randomUUID()}`;
    await pipeline.post(sampleDelivery('key.revoked', { id })).expect(202);
    await endpoint.inbox.atLeast(1);
    expect(endpoint.rejected).toEqual([]);
    const [message] = endpoint.inbox.messages;
    expect(message?.signature).toMatch(/^v1a,[A-Za-z0-9+/]{86}==$/);
  });

  it('with FORWARD_SECRET: a v1 and a v1a entry, space-separated, each verifying on its own', async () => {
    const secret = forwardSecret();
    const { signingKey, publicKey } = forwardKeyPair();
    // The library checks the v1 entry; the public key the v1a one: both must pass.
    const endpoint = await endpointFor({ secret, publicKeys: [publicKey] });
    const pipeline = await pipelineTo({
      FORWARD_URLS: endpoint.url,
      FORWARD_SECRET: secret,
      FORWARD_SIGNING_KEY: signingKey,
    });
    await pipeline.post(sampleDelivery('key.revoked', { id: `both-${randomUUID()}` })).expect(202);
    await endpoint.inbox.atLeast(1);
    expect(endpoint.rejected).toEqual([]);
    const entries = endpoint.inbox.messages[0]?.signature?.split(' ') ?? [];
    expect(entries.map((entry) => entry.split(',')[0])).toEqual(['v1', 'v1a']);
  });

  it('while rotating (two keys): an entry for each, `forward public-key` prints both, and a consumer holding either public key verifies', async () => {
    const [old, next] = [forwardKeyPair(), forwardKeyPair()];
    const endpoint = await endpointFor({ publicKeys: [next.publicKey] });
    const pipeline = await pipelineTo({
      FORWARD_URLS: endpoint.url,
      FORWARD_SIGNING_KEY: `${old.signingKey},${next.signingKey}`,
    });
    expect((await pipeline.cli('forward', 'public-key')).stdout).toBe(
      `${old.publicKey}\n${next.publicKey}\n`,
    );
    await pipeline
      .post(sampleDelivery('key.revoked', { id: `rotate-${randomUUID()}` }))
      .expect(202);
    await endpoint.inbox.atLeast(1);
    expect(endpoint.rejected).toEqual([]);
    expect(endpoint.inbox.messages[0]?.signature?.split(' ')).toHaveLength(2);
  });

  it('`forward public-key` without a key: exit 1, one line naming FORWARD_SIGNING_KEY', async () => {
    const pipeline = await pipelineTo({});
    const printed = await pipeline.cli('forward', 'public-key');
    expect(printed.code).toBe(1);
    expect(printed.stdout).toBe('');
    expect(printed.stderr).toMatch(/^audio-webhooks: FORWARD_SIGNING_KEY is not set[^\n]*\n$/);
  });
});

describe('trace context', () => {
  it("the HTTP, NATS and RabbitMQ forwards of one delivery carry one trace id, the inspector's trace_id", async () => {
    const destinations = await startThreeDestinations();
    running.push(destinations);
    const pipeline = await pipelineTo(destinations.env);
    const id = `trace-${randomUUID()}`;
    await pipeline.post(sampleDelivery('key.revoked', { id })).expect(202);
    const { endpoint, stream, rabbit } = destinations;
    await Promise.all([endpoint, stream, rabbit].map((d) => d.inbox.atLeast(1)));
    const ids = [endpoint, stream, rabbit].map((d) => traceIdOf(d.inbox.messages[0]));
    expect(new Set(ids).size).toBe(1);
    const traced = (await detail(pipeline, id)).trace_id;
    expect(traced).toBe(ids[0]);
    expect((await pipeline.cli('inspect', id)).stdout).toContain(`trace      ${String(traced)}`);
    // Each send is a span of its own in that trace: its parent id is its own.
    const parents = [endpoint, stream, rabbit].map((d) =>
      d.inbox.messages[0]?.traceparent?.slice(36, 52),
    );
    expect(new Set(parents).size).toBe(3);
  });

  it('a delivery that arrived with a traceparent is forwarded in that trace; a malformed one is ignored', async () => {
    const secret = forwardSecret();
    const endpoint = await endpointFor(secret);
    const pipeline = await pipelineTo({ FORWARD_URLS: endpoint.url, FORWARD_SECRET: secret });
    const provider = randomBytes(16).toString('hex');
    const parent = randomBytes(8).toString('hex');
    const [joined, malformed] = [`joined-${randomUUID()}`, `malformed-${randomUUID()}`];
    await pipeline
      .post(sampleDelivery('key.revoked', { id: joined }))
      .set('traceparent', `00-${provider}-${parent}-01`)
      .expect(202);
    // Upper-case hex is not version 00 as written: ignored, the delivery gets a trace of its own.
    await pipeline
      .post(sampleDelivery('key.revoked', { id: malformed }))
      .set('traceparent', `00-${provider.toUpperCase()}-${parent}-01`)
      .expect(202);
    await endpoint.inbox.atLeast(2);
    const byId = (dataId: string) => endpoint.inbox.messages.find((m) => m.body.id === dataId);
    expect(traceIdOf(byId(joined))).toBe(provider);
    expect(byId(joined)?.traceparent).not.toContain(parent);
    expect((await detail(pipeline, joined)).trace_id).toBe(provider);
    const own = traceIdOf(byId(malformed));
    expect(own).not.toBe(provider);
    expect((await detail(pipeline, malformed)).trace_id).toBe(own);
  });
});

it("the endpoint's v1a check refuses a header without a v1a entry that verifies", () => {
  const { publicKey } = forwardKeyPair();
  const headers = {
    'webhook-id': 'x',
    'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
    'webhook-signature': `v1,${randomBytes(32).toString('base64')}`,
  };
  expect(() => {
    verifyV1a([publicKey], '{}', headers);
  }).toThrow('no signature verifies');
});
