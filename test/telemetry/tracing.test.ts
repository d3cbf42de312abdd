import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { audio, startLocalCdn, type LocalCdn } from '../../harness/local-cdn';
import { startCollector } from '../../harness/otlp-collector';
import { forwardKeyPair } from '../../harness/forward-destinations';
import { freePort } from '../../harness/private-redis';
import { downloadsFrom, serviceSettings, webOn } from '../helpers/service-settings';
import { spawnService, type ServiceProcess } from '../helpers/spawn-service';
import { signed } from '../helpers/test-receiver';

let cdn: LocalCdn;
let collector: Awaited<ReturnType<typeof startCollector>>;
const running: ServiceProcess[] = [];

beforeAll(async () => {
  [cdn, collector] = await Promise.all([startLocalCdn(), startCollector()]);
});
/** Example consumers a test started: stopped after it, also when it failed. */
const consumers: ChildProcess[] = [];
afterEach(async () => {
  for (const child of consumers.splice(0)) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
  }
});
afterAll(async () => {
  for (const service of running) service.child.kill('SIGKILL');
  await Promise.all([cdn.close(), collector.close()]);
});

it('one delivery is one trace, from the HTTP request in the web process to the file write in the worker', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'aw-otel-'));
  const caFile = join(dir, 'cdn-ca.pem');
  writeFileSync(caFile, cdn.ca);
  cdn.route('/voices/traced.mp3', audio(randomBytes(50_000)));
  const port = await freePort();
  const common = serviceSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint });
  const web = spawnService({ ...common, ...webOn(port) });
  const worker = spawnService({
    ...common,
    ROLE: 'worker',
    AUDIO_DIR: join(dir, 'audio'),
    ...downloadsFrom(cdn.origin, caFile),
  });
  running.push(web, worker);
  await Promise.all([web.receiving(), worker.waitForLog('audio-webhooks started')]);

  const { raw, headers } = signed(
    sampleDelivery('audio.ready', {
      id: 'traced-1',
      data: { audio_url: `${cdn.origin}/voices/traced.mp3` },
    }),
  );
  const res = await fetch(`http://127.0.0.1:${port}/webhooks`, {
    method: 'POST',
    headers,
    body: raw,
  });
  expect(res.status).toBe(202);
  await worker.waitForLog('audio downloaded');

  // Shutdown flushes the batched spans.
  web.child.kill('SIGTERM');
  worker.child.kill('SIGTERM');
  expect(await Promise.all([web.exited, worker.exited])).toEqual([0, 0]);

  expect([...collector.contentTypes]).toEqual(['POST /v1/traces application/json']);
  const server = collector.spans.find((s) => s.name === 'POST /webhooks');
  if (server === undefined)
    throw new Error(`no request span in ${JSON.stringify(collector.spans)}`);
  const trace = collector.spans.filter((s) => s.traceId === server.traceId);
  const names = (role: string) => trace.filter((s) => s.role === role).map((s) => s.name);
  expect(names('web')).toEqual(
    expect.arrayContaining([
      'POST /webhooks',
      'webhook.verify_signature',
      'add deliveries.audio.ready',
    ]),
  );
  expect(names('worker')).toEqual(
    expect.arrayContaining([
      'process deliveries',
      'webhook.handle',
      'audio.download',
      'audio.write',
      // The local store writes the metadata inside audio.write, fsyncing both files at once.
      'files.sync',
      'file.fsync',
      'directory.fsync',
    ]),
  );
  // One tree: every span but the request's has its parent in the same trace.
  const ids = new Set(trace.map((s) => s.spanId));
  for (const span of trace.filter((s) => s !== server)) expect(ids).toContain(span.parentSpanId);
  expect(server.parentSpanId ?? '').toBe('');
});

it("a delivery that came with the provider's traceparent is one trace from the provider's request to the example HTTP consumer's span", async () => {
  const { signingKey, publicKey } = forwardKeyPair();
  const consumerPort = await freePort();
  const consumer = spawn(
    process.execPath,
    [join(__dirname, '..', '..', 'examples', 'consumers', 'http-consumer.mjs')],
    {
      env: {
        PATH: process.env.PATH ?? '',
        FORWARD_PUBLIC_KEY: publicKey,
        CONSUMER_PORT: String(consumerPort),
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  consumers.push(consumer);
  let printed = '';
  const waiters: { pattern: RegExp; resolve: () => void }[] = [];
  consumer.stdout.on('data', (chunk: Buffer) => {
    printed += chunk.toString();
    for (const waiter of waiters.filter((w) => w.pattern.test(printed))) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  });
  const printedLine = (pattern: RegExp) =>
    pattern.test(printed)
      ? Promise.resolve()
      : new Promise<void>((resolve) => waiters.push({ pattern, resolve }));
  await printedLine(/listening/);
  const port = await freePort();
  const common = serviceSettings({
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
    FORWARD_URLS: `http://127.0.0.1:${consumerPort}/audio`,
    FORWARD_SIGNING_KEY: signingKey,
  });
  const web = spawnService({ ...common, ...webOn(port) });
  const worker = spawnService({ ...common, ROLE: 'worker' });
  running.push(web, worker);
  await Promise.all([web.receiving(), worker.waitForLog('audio-webhooks started')]);

  const provider = { trace: randomBytes(16).toString('hex'), span: randomBytes(8).toString('hex') };
  const { raw, headers } = signed(sampleDelivery('key.revoked', { id: 'traced-forward-1' }));
  const res = await fetch(`http://127.0.0.1:${port}/webhooks`, {
    method: 'POST',
    headers: { ...headers, traceparent: `00-${provider.trace}-${provider.span}-01` },
    body: raw,
  });
  expect(res.status).toBe(202);
  await printedLine(new RegExp(`traced-forward-1 - ${provider.trace}\n`));

  // Shutdown flushes the batched spans, the consumer's too.
  const consumerExited = once(consumer, 'exit');
  for (const child of [web.child, worker.child, consumer]) child.kill('SIGTERM');
  expect(await Promise.all([web.exited, worker.exited])).toEqual([0, 0]);
  await consumerExited;

  const trace = collector.spans.filter((s) => s.traceId === provider.trace);
  const server = trace.find((s) => s.name === 'POST /webhooks');
  const send = trace.find((s) => s.role === 'worker' && s.name.startsWith('forward '));
  const consumed = trace.find((s) => s.name === 'consume audio-webhooks forward');
  if (server === undefined || send === undefined || consumed === undefined)
    throw new Error(`a span is missing from ${JSON.stringify(trace)}`);
  // The provider's span is the request's parent; the forward's send is the consumer's.
  expect(server.parentSpanId).toBe(provider.span);
  expect(consumed.parentSpanId).toBe(send.spanId);
  // One tree: every span but the request's has its parent in the same trace.
  const ids = new Set(trace.map((s) => s.spanId));
  for (const span of trace.filter((s) => s !== server)) expect(ids).toContain(span.parentSpanId);
});
