import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IPodSpec } from 'kubernetes-models/v1/PodSpec';
import { parse, parseAllDocuments } from 'yaml';
import { renderFolder, type Manifest } from '../helpers/kustomize';
import { loadConfig } from '../../src/config/config';
import { BACKLOG_METRIC } from '../../src/telemetry/metrics';
import { FORWARD_BACKLOG_METRIC } from '../../src/forwarding/forward-metrics';

// The base (deploy/kubernetes) and the pieces that agree with the service: probes, ports, the
// grace period, the ConfigMap's settings against the service's own parser, the metrics KEDA and
// the PodMonitor read. test/integration/deploy-overlays.test.ts validates every rendering (this
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

it('renders every kind the contract names, and the NetworkPolicies that isolate the pods', () => {
  const kinds = manifests.map((m) => `${m.apiVersion}/${m.kind}`);
  expect(new Set(kinds)).toEqual(
    new Set([
      'v1/ConfigMap',
      'v1/Service',
      'v1/PersistentVolumeClaim',
      'apps/v1/Deployment',
      'policy/v1/PodDisruptionBudget',
      'autoscaling/v2/HorizontalPodAutoscaler',
      'keda.sh/v1alpha1/ScaledObject',
      'networking.k8s.io/v1/NetworkPolicy',
      'monitoring.coreos.com/v1/PrometheusRule',
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
  expect(readFileSync(join(BASE, 'prometheus-rule.yaml'), 'utf8')).toBe(made);
  // And what the base renders holds alerts.yml's groups unchanged, the ones promtool tests.
  const file = parse(readFileSync(join(root, 'deploy', 'prometheus', 'alerts.yml'), 'utf8')) as {
    groups: unknown;
  };
  expect(named('PrometheusRule', 'audio-webhooks').spec?.groups).toEqual(file.groups);
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

it('both Deployments: non-root, read-only root, limits, config from the ConfigMap, secrets from a Secret', () => {
  // The image runs as "node" (uid 1000): the Dockerfile's USER.
  expect(readFileSync(join(root, 'Dockerfile'), 'utf8')).toMatch(/^USER node$/m);
  for (const deployment of [receiver, worker]) {
    const pod = podSpec(deployment);
    const c = container(deployment);
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 });
    expect(c.securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
    expect(c.resources?.requests).toEqual({ cpu: expect.any(String), memory: expect.any(String) });
    expect(c.resources?.limits).toEqual({ cpu: expect.any(String), memory: expect.any(String) });
    expect(c.envFrom).toEqual([
      { configMapRef: { name: configMap?.metadata.name } },
      { secretRef: { name: 'audio-webhooks-secrets' } },
    ]);
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
  expect(c.lifecycle?.preStop?.exec?.command).toEqual(['sleep', '5']);

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

it('KEDA scales the worker on the backlog metrics the service exports: deliveries and forwards', () => {
  const scaled = named('ScaledObject', 'audio-webhooks-worker');
  expect(scaled.spec?.scaleTargetRef).toEqual({ name: worker.metadata.name });
  // This installation's series only: its namespace, and the job the PodMonitor names.
  const scope = `{namespace="${scaled.metadata.namespace ?? ''}", job="${podLabels(worker)['app.kubernetes.io/name'] ?? ''}"}`;
  expect(scaled.spec?.triggers).toEqual([
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

describe('the S3 overlay (deploy/overlays/s3)', () => {
  const overlay = parseAllDocuments(
    execFileSync('kubectl', ['kustomize', join(root, 'deploy', 'overlays', 's3')], {
      encoding: 'utf8',
    }),
  ).map((doc) => doc.toJSON() as Manifest);
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
    expect(container(overlayWorker).envFrom).toContainEqual({
      secretRef: { name: 'audio-webhooks-s3', optional: true },
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
      { secretRef: { name: 'audio-webhooks-secrets' } },
      { secretRef: { name: 'audio-webhooks-s3', optional: true } },
    ]);
    expect(container(overlayReceiver).envFrom).toEqual(container(overlayWorker).envFrom);
    // Nothing to write to: a read-only root filesystem and scratch space only.
    expect(container(overlayReceiver).securityContext?.readOnlyRootFilesystem).toBe(true);
    expect(container(overlayReceiver).volumeMounts?.map((m) => m.mountPath)).toEqual(['/tmp']);
  });
});

describe('the monitoring overlay (deploy/overlays/monitoring)', () => {
  const overlay = parseAllDocuments(
    execFileSync('kubectl', ['kustomize', join(root, 'deploy', 'overlays', 'monitoring')], {
      encoding: 'utf8',
    }),
  ).map((doc) => doc.toJSON() as Manifest);
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

  it('renders the base and a PodMonitor', () => {
    expect(overlay.map((m) => `${m.kind}/${m.metadata.name}`).sort()).toEqual(
      [...manifests.map((m) => `${m.kind}/${m.metadata.name}`), 'PodMonitor/audio-webhooks'].sort(),
    );
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
