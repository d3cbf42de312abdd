import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { PersistentVolumeClaim } from 'kubernetes-models/v1/PersistentVolumeClaim';
import { Service } from 'kubernetes-models/v1/Service';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IPodSpec } from 'kubernetes-models/v1/PodSpec';
import { parseAllDocuments } from 'yaml';
import { loadConfig } from '../../src/config/config';
import { BACKLOG_METRIC } from '../../src/telemetry/metrics';
import { FORWARD_BACKLOG_METRIC } from '../../src/forward/start-forwarding';

const root = join(__dirname, '..', '..');
const BASE = join(root, 'deploy', 'kubernetes');

/** Each kind the base may hold, with the schema (Kubernetes 1.32, KEDA 2) that validates it. */
const MODELS = {
  'v1/ConfigMap': ConfigMap,
  'v1/Service': Service,
  'v1/PersistentVolumeClaim': PersistentVolumeClaim,
  'apps/v1/Deployment': Deployment,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'keda.sh/v1alpha1/ScaledObject': ScaledObject,
} as const;

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
}

// `kubectl kustomize`, as the contract says; no cluster needed. (.ci/run installs kubectl.)
const rendered = execFileSync('kubectl', ['kustomize', BASE], { encoding: 'utf8' });
const manifests = parseAllDocuments(rendered).map((doc) => doc.toJSON() as Manifest);
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

it('renders every kind the contract names, each valid against its schema', () => {
  const kinds = manifests.map((m) => `${m.apiVersion}/${m.kind}`);
  expect(new Set(kinds)).toEqual(new Set(Object.keys(MODELS)));
  for (const manifest of manifests) {
    const Model = MODELS[`${manifest.apiVersion}/${manifest.kind}` as keyof typeof MODELS];
    expect(() => {
      new Model(manifest as never).validate();
    }).not.toThrow();
  }
});

it('the validation has teeth: a probe without a port and a non-string KEDA threshold are refused', () => {
  const broken = structuredClone(receiver) as unknown as { spec: { template: { spec: IPodSpec } } };
  const first = broken.spec.template.spec.containers[0];
  if (first?.livenessProbe?.httpGet === undefined) throw new Error('the receiver has no liveness');
  delete (first.livenessProbe.httpGet as { port?: unknown }).port;
  expect(() => {
    new Deployment(broken as never).validate();
  }).toThrow(/port/);
  const scaled = structuredClone(named('ScaledObject', 'audio-webhooks-worker')) as never as {
    spec: { triggers: { metadata: Record<string, unknown> }[] };
  };
  const [trigger] = scaled.spec.triggers;
  if (trigger === undefined) throw new Error('no trigger');
  trigger.metadata.threshold = 50;
  expect(() => {
    new ScaledObject(scaled as never).validate();
  }).toThrow(/threshold/);
});

it("the ConfigMap's settings are ones the service accepts", () => {
  expect(() => loadConfig({ ...settings, WEBHOOK_SECRETS: 'from-the-secret' })).not.toThrow();
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
  expect(scaled.spec?.triggers).toEqual([
    {
      type: 'prometheus',
      metadata: expect.objectContaining({
        query: `max(${BACKLOG_METRIC})`,
        threshold: expect.stringMatching(/^\d+$/),
      }),
    },
    {
      type: 'prometheus',
      metadata: expect.objectContaining({
        query: `max(${FORWARD_BACKLOG_METRIC}) or vector(0)`,
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

  it('renders valid manifests, without the ReadWriteMany claim or any volume from one', () => {
    for (const manifest of overlay) {
      const Model = MODELS[`${manifest.apiVersion}/${manifest.kind}` as keyof typeof MODELS];
      expect(() => {
        new Model(manifest as never).validate();
      }).not.toThrow();
    }
    expect(overlay.filter((m) => m.kind === 'PersistentVolumeClaim')).toEqual([]);
    if (overlayWorker === undefined) throw new Error('no worker in the overlay');
    const pod = podSpec(overlayWorker);
    expect(pod.volumes?.filter((v) => v.persistentVolumeClaim !== undefined)).toEqual([]);
    expect(container(overlayWorker).volumeMounts?.map((m) => m.mountPath)).toEqual(['/tmp']);
  });

  it('settings the service accepts, AUDIO_STORE=s3, S3 credentials from a Secret', () => {
    const config = overlay.find((m) => m.kind === 'ConfigMap')?.data ?? {};
    expect(loadConfig({ ...config, WEBHOOK_SECRETS: 'from-the-secret' })).toMatchObject({
      audioStore: 's3',
      s3Bucket: expect.any(String),
    });
    if (overlayWorker === undefined) throw new Error('no worker in the overlay');
    expect(container(overlayWorker).envFrom).toContainEqual({
      secretRef: { name: 'audio-webhooks-s3', optional: true },
    });
  });
});
