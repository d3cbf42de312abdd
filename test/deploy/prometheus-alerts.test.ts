import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { eventually } from '../../src/util/eventually';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import {
  forwardSecret,
  startHttpEndpoint,
  type HttpEndpoint,
} from '../../harness/forward-destinations';
import { audio, startLocalCdn, type LocalCdn } from '../../harness/local-cdn';
import { freePort, startPrivateRedis, type PrivateRedis } from '../../harness/private-redis';
import {
  startPrometheus,
  type ActiveAlert,
  type PrometheusServer,
} from '../helpers/servers/prometheus-server';
import { downloadsFrom, serviceSettings } from '../helpers/service-settings';
import { spawnService, type ServiceProcess } from '../helpers/spawn-service';
import { signed, TEST_SECRET } from '../helpers/test-receiver';

// deploy/prometheus/alerts.yml and deploy/grafana/audio-webhooks.json against a real Prometheus
// scraping the real service every second: a receiver (ROLE=web) from the start, a worker started
// once the backlog alert has fired, and a Redis of the test's own, stopped for the outage.
// Shared by the tests, started once (Prometheus and the receiver take seconds): the Redis, the
// CDN, the endpoint, the receiver and Prometheus. Each test starts the worker it needs (stopped
// after it by spawn-service.ts) and sends the traffic it measures, so it runs alone as well.
const DEPLOY = join(__dirname, '..', '..', 'deploy');
const JOB = 'audio-webhooks';
/** Deliveries posted while no worker runs. */
const N = 20;

let redis: PrivateRedis;
let cdn: LocalCdn;
let endpoint: HttpEndpoint;
let prometheus: PrometheusServer;
let web: ServiceProcess;
let env: Record<string, string>;
let port: number;
let healthPort: number;

/**
 * alerts.yml with one change: AudioWebhooksBacklogAging's threshold (1800 s) and `for` (5m),
 * which a test cannot wait for, become 5 s and 5s. Every other rule, and that rule's expression
 * but for its number, are the file's own.
 */
function scaledRules(): string {
  const rules = parse(readFileSync(join(DEPLOY, 'prometheus', 'alerts.yml'), 'utf8')) as {
    groups: { rules: { alert: string; expr: string; for?: string }[] }[];
  };
  const aging = rules.groups
    .flatMap((g) => g.rules)
    .find((r) => r.alert === 'AudioWebhooksBacklogAging');
  if (aging?.expr.endsWith('> 1800') !== true || aging.for !== '5m')
    throw new Error('AudioWebhooksBacklogAging changed: update this test');
  aging.expr = aging.expr.replace(/> 1800$/, '> 5');
  aging.for = '5s';
  const file = join(mkdtempSync(join(tmpdir(), 'aw-rules-')), 'alerts.yml');
  writeFileSync(file, stringify(rules));
  return file;
}

function service(role: 'web' | 'worker', own: Record<string, string>): ServiceProcess {
  return spawnService({ ...env, ROLE: role, ...own });
}

/** A worker for this test, scraped as the `worker` target; stopped after the test. */
async function startWorker(): Promise<ServiceProcess> {
  const worker = service('worker', { WORKER_HEALTH_PORT: String(healthPort) });
  await worker.waitForLog('audio-webhooks started');
  return worker;
}

/** Resolves once the endpoint has the message for `id` (forwarded under `audio.ready:<id>`). */
function forwarded(id: string): Promise<true> {
  return eventually(
    () => Promise.resolve(endpoint.inbox.ids().includes(`audio.ready:${id}`) ? true : undefined),
    { timeoutMs: 30_000, everyMs: 100 },
  );
}

async function post(body: unknown, secret = TEST_SECRET): Promise<number> {
  const { raw, headers } = signed(body, { secret });
  const res = await fetch(`http://127.0.0.1:${String(port)}/webhooks`, {
    method: 'POST',
    headers,
    body: raw,
  });
  await res.arrayBuffer();
  return res.status;
}

const named = (alerts: ActiveAlert[], name: string) =>
  alerts.filter((a) => a.labels.alertname === name);

/** Resolves with the alert once Prometheus lists `name` as firing. */
function firing(name: string, timeoutMs: number): Promise<ActiveAlert> {
  return eventually(
    async () => named(await prometheus.alerts(), name).find((a) => a.state === 'firing'),
    {
      timeoutMs,
      everyMs: 250,
    },
  );
}

/** Resolves once Prometheus lists `name` neither pending nor firing. */
function resolved(name: string, timeoutMs: number): Promise<true> {
  return eventually(
    async () => (named(await prometheus.alerts(), name).length === 0 ? true : undefined),
    { timeoutMs, everyMs: 250 },
  );
}

beforeAll(async () => {
  redis = await startPrivateRedis();
  cdn = await startLocalCdn();
  cdn.fallback(audio(randomBytes(4096)));
  const caFile = join(mkdtempSync(join(tmpdir(), 'aw-ca-')), 'ca.pem');
  writeFileSync(caFile, cdn.ca);
  const secret = forwardSecret();
  endpoint = await startHttpEndpoint(secret);
  port = await freePort();
  const internalPort = await freePort();
  healthPort = await freePort();
  env = serviceSettings({
    REDIS_URL: redis.url,
    AUDIO_DIR: mkdtempSync(join(tmpdir(), 'aw-prom-audio-')),
    // What makes every panel's series exist: a download (audio.ready from a local HTTPS CDN) and
    // a forward (to a local HTTP endpoint).
    ...downloadsFrom(cdn.origin, caFile),
    FORWARD_URLS: endpoint.url,
    FORWARD_SECRET: secret,
  });
  web = service('web', { PORT: String(port), INTERNAL_PORT: String(internalPort) });
  await web.receiving();
  prometheus = await startPrometheus({
    job: JOB,
    targets: [
      { port: internalPort, labels: { component: 'receiver' } },
      { port: healthPort, labels: { component: 'worker' } },
    ],
    ruleFile: scaledRules(),
  });
  // The receiver is scraped before anything is measured.
  await eventually(
    async () =>
      (await prometheus.query(`up{job="${JOB}",component="receiver"} == 1`)).length === 1
        ? true
        : undefined,
    { timeoutMs: 30_000 },
  );
}, 90_000);

afterAll(async () => {
  if (web.child.exitCode === null) {
    web.child.kill('SIGTERM');
    await web.exited;
  }
  await prometheus.stop();
  await endpoint.close();
  await cdn.close();
  await redis.stop();
}, 60_000);

it('with no worker running, deliveries wait and AudioWebhooksBacklogAging fires (threshold and for scaled down to 5 s); a worker drains the backlog and it resolves', async () => {
  expect(named(await prometheus.alerts(), 'AudioWebhooksBacklogAging')).toEqual([]);
  const statuses = await Promise.all(
    Array.from({ length: N }, (_, i) =>
      post(sampleDelivery('audio.ready', { id: `aging-${String(i)}`, cdnOrigin: cdn.origin })),
    ),
  );
  expect(statuses).toEqual(Array<number>(N).fill(202));
  // A 401 and a 400 too: the dashboard's 4xx and signature-failure panels need their series.
  expect(await post(sampleDelivery('key.revoked'), 'whsec_not_the_secret')).toBe(401);
  expect(await post({ event: 'audio.ready', data: { id: 'no-url' } })).toBe(400);

  const alert = await firing('AudioWebhooksBacklogAging', 60_000);
  expect(alert.labels).toMatchObject({ job: JOB, severity: 'critical' });
  expect(Number(alert.value)).toBeGreaterThan(5);
  expect(alert.annotations.runbook_url).toBe('docs/operations.md#audiowebhooksbacklogaging');

  // A worker drains the backlog (downloads, forwards).
  await startWorker();
  await Promise.all(Array.from({ length: N }, (_, i) => forwarded(`aging-${String(i)}`)));
  await resolved('AudioWebhooksBacklogAging', 30_000);
}, 150_000);

it('a Redis outage: AudioWebhooksRedisUnavailable fires after its `for` (1 minute), and resolves once Redis is back', async () => {
  expect(named(await prometheus.alerts(), 'AudioWebhooksRedisUnavailable')).toEqual([]);
  await startWorker();
  await redis.stop();
  const stoppedAt = Date.now();
  // The provider keeps sending: refused with 503 (the dashboard's 5xx series).
  expect(await post(sampleDelivery('key.revoked'))).toBe(503);

  const alert = await firing('AudioWebhooksRedisUnavailable', 120_000);
  // Not before its `for`; how soon after is bounded only by firing's wait (a scrape, an
  // evaluation and the service's own check come on top, longer on a loaded machine).
  expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(59_000);
  expect(alert.labels).toMatchObject({ job: JOB, severity: 'critical' });

  await redis.start();
  await resolved('AudioWebhooksRedisUnavailable', 60_000);
  // The pipeline works again, end to end.
  expect(await post(sampleDelivery('audio.ready', { id: 'after', cdnOrigin: cdn.origin }))).toBe(
    202,
  );
  await forwarded('after');
}, 240_000);

it("every query of deploy/grafana/audio-webhooks.json's panels returns series", async () => {
  // The traffic every panel shows, this test's own: a 503 (Redis stopped a moment), then a
  // download and a forward, a 401 and a 400.
  await startWorker();
  await redis.stop();
  expect(await post(sampleDelivery('key.revoked'))).toBe(503);
  await redis.start();
  const id = `panels-${randomUUID()}`;
  await eventually(
    async () =>
      (await post(sampleDelivery('audio.ready', { id, cdnOrigin: cdn.origin }))) === 202
        ? true
        : undefined,
    { timeoutMs: 30_000, everyMs: 250 },
  );
  expect(await post(sampleDelivery('key.revoked'), 'whsec_not_the_secret')).toBe(401);
  expect(await post({ event: 'audio.ready', data: { id: 'no-url' } })).toBe(400);
  await forwarded(id);
  const dashboard = JSON.parse(
    readFileSync(join(DEPLOY, 'grafana', 'audio-webhooks.json'), 'utf8'),
  ) as { panels: { title: string; targets?: { expr: string }[] }[] };
  // Grafana substitutes its variables: $job (the dashboard's variable, whose default is the job
  // the alerts select), $namespace (empty here: these targets, from a static list, carry no
  // namespace label, and namespace="" selects exactly them) and
  // $__rate_interval (at least four scrape intervals: here 1 s).
  const queries = dashboard.panels.flatMap((panel) =>
    (panel.targets ?? []).map((t) => ({
      panel: panel.title,
      expr: t.expr
        .replaceAll('$__rate_interval', '30s')
        .replaceAll('$job', JOB)
        .replaceAll('$namespace', ''),
    })),
  );
  expect(queries.length).toBeGreaterThan(20);
  expect(queries.filter((q) => q.expr.includes('$'))).toEqual([]);
  const empty = async () => {
    const none = [];
    for (const q of queries) if ((await prometheus.query(q.expr)).length === 0) none.push(q);
    return none;
  };
  // Series appear within a scrape or two of the traffic above; past the deadline, name the rest.
  const left = await eventually(
    async () => {
      const none = await empty();
      return none.length === 0 ? none : undefined;
    },
    { timeoutMs: 20_000, everyMs: 1_000 },
  ).catch(empty);
  expect(left).toEqual([]);
}, 90_000);
