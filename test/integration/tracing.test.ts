import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { audio, startLocalCdn, type LocalCdn } from '../../harness/local-cdn';
import { startCollector } from '../../harness/otlp-collector';
import { freePort } from '../../harness/private-redis';
import { spawnService, type ServiceProcess } from '../helpers/spawn-service';
import { signed, TEST_SECRET } from '../helpers/test-receiver';

let cdn: LocalCdn;
let collector: Awaited<ReturnType<typeof startCollector>>;
const running: ServiceProcess[] = [];

beforeAll(async () => {
  [cdn, collector] = await Promise.all([startLocalCdn(), startCollector()]);
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
  const common = {
    WEBHOOK_SECRETS: TEST_SECRET,
    REDIS_URL: process.env.REDIS_URL ?? '',
    QUEUE_PREFIX: `otel-${randomBytes(4).toString('hex')}`,
    HOST: '127.0.0.1',
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
  };
  const web = spawnService({ ...common, ROLE: 'web', PORT: String(port), WEB_CONCURRENCY: '1' });
  const worker = spawnService({
    ...common,
    ROLE: 'worker',
    AUDIO_DIR: join(dir, 'audio'),
    CDN_URL: cdn.origin,
    DOWNLOAD_CA_FILE: caFile,
    DOWNLOAD_ALLOW_PRIVATE_IPS: 'true',
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
