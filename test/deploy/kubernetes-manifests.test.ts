import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IPodSpec } from 'kubernetes-models/v1/PodSpec';
import { Redis } from 'ioredis';
import { parse } from 'yaml';
import { afterTest } from '../helpers/after-test';
import { renderFolder, type Manifest } from '../helpers/kustomize';
import { startPrivateRedis } from '../../harness/private-redis';
import { loadConfig } from '../../src/settings';
import { SETTINGS } from '../../src/settings';
import { createForwardQueue, FORWARD_QUEUE } from '../../src/forwarding/forward-queue';
import { createDeliveryQueue, DELIVERY_QUEUE } from '../../src/queue/delivery-queue';
import { deliveryJobData } from '../../src/queue/delivery-job-data';
import { BACKLOG_METRIC } from '../../src/telemetry/metrics';
import { FORWARD_BACKLOG_METRIC } from '../../src/forwarding/forward-metrics';

// The base (deploy/kubernetes) and the pieces that agree with the service: probes, ports, the
// grace period, the ConfigMap's settings against the service's own parser, the metrics KEDA and
// the PodMonitor read. test/deploy/deploy-overlays.test.ts validates every rendering (this
// base, the overlays, the components combined) against the schemas and checks what they must
// hold before they are applied.

const root = join(__dirname, '..', '..');
const BASE = join(root, 'deploy', 'kubernetes');

const manifests = renderFolder(BASE);
const named = (kind: string, name: string) => {
  const found = manifests.find((m) => m.kind === kind && m.metadata.name === name);
  if (found === undefined) throw new Error(`no ${kind} ${name} in the rendered base`);
  return found;
};
const configMap = manifests.find((m) => m.kind === 'ConfigMap');
const settings = configMap?.data ?? {};
const receiver = named('Deployment', 'audio-webhooks-receiver');
const worker = named('Deployment', 'audio-webhooks-worker');
const podSpec = (d: Manifest) => (d.spec as { template: { spec: IPodSpec } }).template.spec;
const podLabels = (d: Manifest) =>
  (d.spec as { template: { metadata: { labels: Record<string, string> } } }).template.metadata
    .labels;
const container = (d: Manifest): IContainer => {
  const [only] = podSpec(d).containers;
  if (only === undefined) throw new Error(`${d.metadata.name} has no container`);
  return only;
};
const env = (c: IContainer, name: string) => c.env?.find((e) => e.name === name)?.value;

it('renders every kind the contract names, and the NetworkPolicies that isolate the pods; nothing of the Prometheus Operator', () => {
  const kinds = manifests.map((m) => `${m.apiVersion}/${m.kind}`);
  // The base applies to a cluster without the Operator's CRDs: its kinds come with
  // deploy/components/monitoring only.
  expect(new Set(kinds)).toEqual(
    new Set([
      'v1/ConfigMap',
      'v1/Service',
      'v1/PersistentVolumeClaim',
      'apps/v1/Deployment',
      'policy/v1/PodDisruptionBudget',
      'autoscaling/v2/HorizontalPodAutoscaler',
      'keda.sh/v1alpha1/ScaledObject',
      'keda.sh/v1alpha1/TriggerAuthentication',
      'networking.k8s.io/v1/NetworkPolicy',
    ]),
  );
});

it('the PrometheusRule is made from deploy/prometheus/alerts.yml: run node scripts/write-prometheus-rule.js', () => {
  // The file is what the script writes now, to the byte: a hand edit, or alerts.yml changed
  // without a run of the script, shows here as the difference (kustomize cannot derive it: the
  // script says why).
  const made = execFileSync(
    process.execPath,
    [join(root, 'scripts', 'write-prometheus-rule.js'), '--stdout'],
    { encoding: 'utf8' },
  );
  const component = join(root, 'deploy', 'components', 'monitoring');
  expect(readFileSync(join(component, 'prometheus-rule.yaml'), 'utf8')).toBe(made);
  // And what the monitoring overlay renders holds alerts.yml's groups unchanged, the ones
  // promtool tests.
  const file = parse(readFileSync(join(root, 'deploy', 'prometheus', 'alerts.yml'), 'utf8')) as {
    groups: unknown;
  };
  const rule = renderFolder(join(root, 'deploy', 'overlays', 'monitoring')).find(
    (m) => m.kind === 'PrometheusRule',
  );
  expect(rule?.spec?.groups).toEqual(file.groups);
});

it("the ConfigMap's settings are ones the service accepts, with the Secret's beside them", () => {
  expect(() =>
    loadConfig({ ...settings, WEBHOOK_SECRETS: 'from-the-secret-0123456789' }),
  ).not.toThrow();
  // The Redis password, from the Secret, goes with the ConfigMap's REDIS_URL.
  expect(
    loadConfig({
      ...settings,
      WEBHOOK_SECRETS: 'from-the-secret-0123456789',
      REDIS_PASSWORD: 'from-the-secret',
    }),
  ).toMatchObject({ redisUrl: settings.REDIS_URL, redisPassword: 'from-the-secret' });
});

it('both Deployments: non-root, read-only root, limits, config from the ConfigMap, secrets from Secrets that are not optional', () => {
  // The image runs as "node" (uid 1000): the Dockerfile's USER.
  expect(readFileSync(join(root, 'Dockerfile'), 'utf8')).toMatch(/^USER node$/m);
  for (const deployment of [receiver, worker]) {
    const pod = podSpec(deployment);
    const c = container(deployment);
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 });
    // Service links would set AUDIO_WEBHOOKS_SERVICE_HOST and the like, warned about as unknown.
    expect(pod.enableServiceLinks).toBe(false);
    expect(c.securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
    expect(c.resources?.requests).toEqual({ cpu: expect.any(String), memory: expect.any(String) });
    expect(c.resources?.limits).toEqual({ cpu: expect.any(String), memory: expect.any(String) });
    expect(c.envFrom?.[0]).toEqual({ configMapRef: { name: configMap?.metadata.name } });
    // A missing Secret stops the pod (CreateContainerConfigError) rather than starting it without.
    for (const from of c.envFrom?.slice(1) ?? [])
      expect(from).toEqual({ secretRef: { name: expect.stringMatching(/^audio-webhooks-/) } });
    // Kubernetes must not SIGKILL a clean shutdown: grace > preStop + SHUTDOWN_TIMEOUT_MS.
    const preStopSeconds = Number(c.lifecycle?.preStop?.exec?.command?.[1] ?? 0);
    const shutdownSeconds = Number(settings.SHUTDOWN_TIMEOUT_MS) / 1000;
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(preStopSeconds + shutdownSeconds);
  }
});

it('the receiver: ROLE=web, readiness /readyz, liveness /healthz, a preStop pause, scaled on CPU', () => {
  const c = container(receiver);
  expect(env(c, 'ROLE')).toBe('web');
  const port = Number(env(c, 'PORT'));
  const internalPort = Number(env(c, 'INTERNAL_PORT'));
  expect(internalPort).toBeGreaterThan(0);
  expect(internalPort).not.toBe(port);
  expect(c.ports).toEqual([
    { name: 'http', containerPort: port },
    { name: 'internal', containerPort: internalPort },
  ]);
  // Prometheus scrapes the internal port; the Service (below) exposes only the public one.
  const annotations = (receiver.spec as { template: { metadata: { annotations: object } } })
    .template.metadata.annotations;
  expect(annotations).toMatchObject({ 'prometheus.io/port': String(internalPort) });
  expect(c.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'http' });
  expect(c.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
  // Long enough for a cloud load balancer's target group to drop the pod (several health-check
  // intervals), not only the Service's endpoints.
  expect(c.lifecycle?.preStop?.exec?.command).toEqual(['sleep', expect.stringMatching(/^\d+$/)]);
  expect(Number(c.lifecycle?.preStop?.exec?.command?.[1])).toBeGreaterThanOrEqual(15);

  const service = named('Service', 'audio-webhooks');
  expect(service.spec?.selector).toEqual(podLabels(receiver));
  expect(service.spec?.ports).toEqual([{ name: 'http', port: 80, targetPort: 'http' }]);
  const hpa = named('HorizontalPodAutoscaler', 'audio-webhooks-receiver');
  expect(hpa.spec?.scaleTargetRef).toEqual({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    name: receiver.metadata.name,
  });
  expect(hpa.spec?.metrics).toEqual([
    expect.objectContaining({ resource: expect.objectContaining({ name: 'cpu' }) }),
  ]);
});

it('the worker: ROLE=worker, liveness on WORKER_HEALTH_PORT, AUDIO_DIR on the shared volume', () => {
  const c = container(worker);
  expect(env(c, 'ROLE')).toBe('worker');
  expect(c.ports).toEqual([{ name: 'health', containerPort: Number(settings.WORKER_HEALTH_PORT) }]);
  expect(c.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'health' });
  expect(c.volumeMounts).toContainEqual({ name: 'audio', mountPath: settings.AUDIO_DIR });
  const claim = podSpec(worker).volumes?.find((v) => v.name === 'audio')?.persistentVolumeClaim;
  const pvc = named('PersistentVolumeClaim', claim?.claimName ?? '');
  expect(pvc.spec?.accessModes).toEqual(['ReadWriteMany']);
});

it('PodDisruptionBudgets select the pods they guard', () => {
  for (const deployment of [receiver, worker]) {
    const pdb = named('PodDisruptionBudget', deployment.metadata.name);
    expect(pdb.spec?.selector).toEqual({ matchLabels: podLabels(deployment) });
  }
});

/**
 * The Secrets the README has the operator create, and the keys each holds: a `--from-literal`
 * line (commented out or not) belongs to the `create secret generic` above it.
 */
function secretsOfReadme(): Map<string, string[]> {
  const readme = readFileSync(join(BASE, 'README.md'), 'utf8');
  const secrets = new Map<string, string[]>();
  let current: string | undefined;
  for (const line of readme.split('\n')) {
    const created = /create secret generic (\S+)/.exec(line)?.[1];
    if (created !== undefined) {
      current = created;
      secrets.set(created, []);
    }
    for (const [, key = ''] of line.matchAll(/--from-literal=(\w+)=/g))
      if (current !== undefined) secrets.get(current)?.push(key);
  }
  return secrets;
}

it('12. each role its own Secrets: every key the README puts in one is a setting each pod mounting it reads', () => {
  const secrets = secretsOfReadme();
  expect(secrets.get('audio-webhooks-receiver')).toEqual(
    expect.arrayContaining(['WEBHOOK_SECRETS', 'ADMIN_PASSWORD']),
  );
  expect(secrets.get('audio-webhooks-redis')).toEqual(['REDIS_PASSWORD']);
  const mounted = (d: Manifest) =>
    (container(d).envFrom ?? []).flatMap((from) =>
      from.secretRef === undefined ? [] : [from.secretRef.name ?? ''],
    );
  const keysOf = (d: Manifest) => mounted(d).flatMap((name) => secrets.get(name) ?? []);
  // Every Secret a pod mounts is one the README creates.
  for (const deployment of [receiver, worker])
    for (const name of mounted(deployment)) expect([...secrets.keys()]).toContain(name);
  for (const [deployment, role] of [
    [receiver, 'web'],
    [worker, 'worker'],
  ] as const) {
    for (const key of keysOf(deployment)) {
      const readBy = (SETTINGS as Record<string, { readBy: readonly string[] } | undefined>)[key]
        ?.readBy;
      expect({ role, key, read: readBy?.includes(role) }).toEqual({ role, key, read: true });
    }
  }
  // The signing secrets and the dashboard's password never reach a worker.
  expect(keysOf(worker)).not.toContain('WEBHOOK_SECRETS');
  expect(keysOf(worker)).not.toContain('ADMIN_PASSWORD');
  expect(keysOf(receiver)).toEqual(expect.arrayContaining(['WEBHOOK_SECRETS', 'REDIS_PASSWORD']));
});

it("10. KEDA scales the worker on Redis's wait lists, with no Prometheus: the keys BullMQ keeps them under", async () => {
  const scaled = named('ScaledObject', 'audio-webhooks-worker');
  expect(scaled.spec?.scaleTargetRef).toEqual({ name: worker.metadata.name });
  const triggers = scaled.spec?.triggers as {
    type: string;
    metadata: Record<string, string>;
    authenticationRef?: { name: string };
  }[];
  expect(triggers.map((t) => t.type)).toEqual(['redis', 'redis']);
  const prefix = settings.QUEUE_PREFIX ?? '';
  expect(triggers.map((t) => t.metadata.listName)).toEqual([
    `${prefix}:${DELIVERY_QUEUE}:wait`,
    `${prefix}:${FORWARD_QUEUE}:wait`,
  ]);
  // KEDA's operator runs in its own namespace: the Service of REDIS_URL by its namespaced name,
  // over TLS as REDIS_URL says.
  const redisUrl = new URL(settings.REDIS_URL ?? '');
  for (const { metadata } of triggers) {
    expect(metadata).toMatchObject({
      address: `${redisUrl.hostname}.${scaled.metadata.namespace ?? ''}.svc:${redisUrl.port}`,
      enableTLS: redisUrl.protocol === 'rediss:' ? 'true' : 'false',
      listLength: expect.stringMatching(/^\d+$/),
    });
  }
  // The password from the Secret the pods read REDIS_PASSWORD from, through a TriggerAuthentication.
  const auth = named('TriggerAuthentication', triggers[0]?.authenticationRef?.name ?? '');
  expect(triggers[1]?.authenticationRef).toEqual(triggers[0]?.authenticationRef);
  const [ref] = auth.spec?.secretTargetRef as { parameter: string; name: string; key: string }[];
  expect(ref).toMatchObject({ parameter: 'password', key: 'REDIS_PASSWORD' });
  expect(secretsOfReadme().get(ref?.name ?? '')).toContain('REDIS_PASSWORD');
  for (const deployment of [receiver, worker])
    expect(container(deployment).envFrom).toContainEqual({ secretRef: { name: ref?.name } });

  // A new delivery and a ready forward are in those very lists, as BullMQ writes them: a
  // scaler reading another key would see 0 and hold the workers at their minimum.
  const server = await startPrivateRedis();
  afterTest(() => server.stop());
  const redis = new Redis(server.url);
  afterTest(() => {
    redis.disconnect();
  });
  const deliveries = createDeliveryQueue({ connection: redis, prefix });
  afterTest(() => deliveries.close());
  const forwards = createForwardQueue(redis, prefix);
  afterTest(() => forwards.close());
  await deliveries.add('audio.failed', deliveryJobData('{}', new Date()), { jobId: 'scaled' });
  await forwards.add('forward', { messageId: 'm', body: '{}' } as never, { jobId: 'scaled' });
  const lengths = () => Promise.all(triggers.map((t) => redis.llen(t.metadata.listName ?? '')));
  expect(await lengths()).toEqual([1, 1]);
  // A replay (a job with a priority) waits in BullMQ's prioritized set instead, which no list
  // length counts: deploy/components/monitoring's Prometheus trigger reads the whole backlog.
  await deliveries.add('audio.failed', deliveryJobData('{}', new Date()), {
    jobId: 'replayed',
    priority: 100,
  });
  expect(await lengths()).toEqual([1, 1]);
  expect(await redis.zcard(`${prefix}:${DELIVERY_QUEUE}:prioritized`)).toBe(1);
});

describe('the S3 overlay (deploy/overlays/s3)', () => {
  const overlay = renderFolder(join(root, 'deploy', 'overlays', 's3'));
  const overlayWorker = overlay.find(
    (m) => m.kind === 'Deployment' && m.metadata.name === 'audio-webhooks-worker',
  );

  it('renders without the ReadWriteMany claim or any volume from one', () => {
    expect(overlay.filter((m) => m.kind === 'PersistentVolumeClaim')).toEqual([]);
    if (overlayWorker === undefined) throw new Error('no worker in the overlay');
    const pod = podSpec(overlayWorker);
    expect(pod.volumes?.filter((v) => v.persistentVolumeClaim !== undefined)).toEqual([]);
    expect(container(overlayWorker).volumeMounts?.map((m) => m.mountPath)).toEqual(['/tmp']);
  });

  it('settings the service accepts, AUDIO_STORE=s3, S3 credentials from a Secret', () => {
    const config = overlay.find((m) => m.kind === 'ConfigMap')?.data ?? {};
    expect(loadConfig({ ...config, WEBHOOK_SECRETS: 'from-the-secret-0123456789' })).toMatchObject({
      audioStore: 's3',
      s3Bucket: expect.any(String),
    });
    if (overlayWorker === undefined) throw new Error('no worker in the overlay');
    // Not optional: a missing Secret stops the pod visibly, not starts it without credentials.
    expect(container(overlayWorker).envFrom).toContainEqual({
      secretRef: { name: 'audio-webhooks-s3' },
    });
  });

  it('the receivers read the archive too (the inspector): the same S3 settings and credentials, no volume', () => {
    const overlayReceiver = overlay.find(
      (m) => m.kind === 'Deployment' && m.metadata.name === 'audio-webhooks-receiver',
    );
    if (overlayReceiver === undefined || overlayWorker === undefined)
      throw new Error('no receiver or worker in the overlay');
    const config = overlay.find((m) => m.kind === 'ConfigMap');
    expect(config?.data).toMatchObject({ AUDIO_STORE: 's3', S3_BUCKET: expect.any(String) });
    // The ConfigMap (the S3 settings), then the Secrets, the S3 one last: as the workers have them.
    expect(container(overlayReceiver).envFrom).toEqual([
      { configMapRef: { name: config?.metadata.name } },
      ...(container(receiver).envFrom ?? []).slice(1),
      { secretRef: { name: 'audio-webhooks-s3' } },
    ]);
    expect(container(overlayWorker).envFrom).toEqual([
      { configMapRef: { name: config?.metadata.name } },
      ...(container(worker).envFrom ?? []).slice(1),
      { secretRef: { name: 'audio-webhooks-s3' } },
    ]);
    // Nothing to write to: a read-only root filesystem and scratch space only.
    expect(container(overlayReceiver).securityContext?.readOnlyRootFilesystem).toBe(true);
    expect(container(overlayReceiver).volumeMounts?.map((m) => m.mountPath)).toEqual(['/tmp']);
  });
});

describe('the monitoring overlay (deploy/overlays/monitoring)', () => {
  const overlay = renderFolder(join(root, 'deploy', 'overlays', 'monitoring'));
  const monitor = overlay.find((m) => m.kind === 'PodMonitor');
  const spec = monitor?.spec as
    | {
        jobLabel: string;
        selector: { matchLabels: Record<string, string> };
        podMetricsEndpoints: {
          port: string;
          path: string;
          relabelings: { sourceLabels: string[]; targetLabel: string }[];
        }[];
      }
    | undefined;

  it('renders the base, a PodMonitor and the PrometheusRule', () => {
    expect(overlay.map((m) => `${m.kind}/${m.metadata.name}`).sort()).toEqual(
      [
        ...manifests.map((m) => `${m.kind}/${m.metadata.name}`),
        'PodMonitor/audio-webhooks',
        'PrometheusRule/audio-webhooks',
      ].sort(),
    );
  });

  it('10. adds KEDA triggers on the backlog metrics the service exports, beside the Redis ones', () => {
    const scaled = overlay.find((m) => m.kind === 'ScaledObject');
    const triggers = scaled?.spec?.triggers as { type: string; metadata: object }[];
    const base = named('ScaledObject', 'audio-webhooks-worker').spec?.triggers as unknown[];
    expect(triggers.slice(0, base.length)).toEqual(base);
    // This installation's series only: its namespace, and the job the PodMonitor names.
    const scope = `{namespace="${scaled?.metadata.namespace ?? ''}", job="${podLabels(worker)['app.kubernetes.io/name'] ?? ''}"}`;
    expect(triggers.slice(base.length)).toEqual([
      {
        type: 'prometheus',
        metadata: expect.objectContaining({
          query: `max(${BACKLOG_METRIC}${scope})`,
          threshold: expect.stringMatching(/^\d+$/),
        }),
      },
      {
        type: 'prometheus',
        metadata: expect.objectContaining({
          query: `max(${FORWARD_BACKLOG_METRIC}${scope}) or vector(0)`,
          threshold: expect.stringMatching(/^\d+$/),
        }),
      },
    ]);
  });

  it("scrapes /metrics on the receivers' INTERNAL_PORT and the workers' WORKER_HEALTH_PORT, never the Service's port", () => {
    if (spec === undefined) throw new Error('no PodMonitor in the overlay');
    const scraped = new Map<string, number | undefined>();
    for (const deployment of [receiver, worker]) {
      // The selector picks the pod, and one of the endpoints names a port it has.
      expect(podLabels(deployment)).toMatchObject(spec.selector.matchLabels);
      const ports = container(deployment).ports ?? [];
      const endpoint = spec.podMetricsEndpoints.find((e) => ports.some((p) => p.name === e.port));
      expect(endpoint?.path).toBe('/metrics');
      scraped.set(
        deployment.metadata.name,
        ports.find((p) => p.name === endpoint?.port)?.containerPort,
      );
    }
    expect(scraped).toEqual(
      new Map([
        [receiver.metadata.name, Number(env(container(receiver), 'INTERNAL_PORT'))],
        [worker.metadata.name, Number(settings.WORKER_HEALTH_PORT)],
      ]),
    );
    const service = named('Service', 'audio-webhooks');
    expect(spec.podMetricsEndpoints.map((e) => e.port)).not.toContain(
      (service.spec?.ports as { targetPort: string }[] | undefined)?.[0]?.targetPort,
    );
  });

  it("labels the targets as the alerts select them: job from the pods' name label, component from theirs", () => {
    if (spec === undefined) throw new Error('no PodMonitor in the overlay');
    const alerts = readFileSync(join(root, 'deploy', 'prometheus', 'alerts.yml'), 'utf8');
    const job = /up\{job="([^"]+)"/.exec(alerts)?.[1];
    for (const deployment of [receiver, worker]) {
      expect(podLabels(deployment)[spec.jobLabel]).toBe(job);
    }
    expect(
      [podLabels(receiver), podLabels(worker)].map((l) => l['app.kubernetes.io/component']),
    ).toEqual(['receiver', 'worker']);
    expect(alerts).toContain('component="receiver"');
    for (const endpoint of spec.podMetricsEndpoints) {
      expect(endpoint.relabelings).toContainEqual({
        sourceLabels: ['__meta_kubernetes_pod_label_app_kubernetes_io_component'],
        targetLabel: 'component',
      });
    }
  });
});
