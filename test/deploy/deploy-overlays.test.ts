import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject';
import { TriggerAuthentication } from '@kubernetes-models/keda/keda.sh/v1alpha1/TriggerAuthentication';
import ipaddr from 'ipaddr.js';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { PersistentVolumeClaim } from 'kubernetes-models/v1/PersistentVolumeClaim';
import { Service } from 'kubernetes-models/v1/Service';
import type { INetworkPolicyPeer } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicyPeer';
import type { INetworkPolicySpec } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicySpec';
import type { IPodSpec } from 'kubernetes-models/v1/PodSpec';
import { stringify } from 'yaml';
import { renderFolder, type Manifest } from '../helpers/kustomize';

// Every way the manifests are meant to be rendered (the base, each overlay, the components on
// the base and on the overlays, the production example) checked for what a platform engineer
// reads before applying them: each object valid, scaling owned by one controller, every pod
// behind NetworkPolicies, no credential in a ConfigMap, KEDA and the alerts scoped to one
// installation with a fallback, pods spread, bounded scratch space, a named storage class.
// (.ci/run installs kubectl; kubectl kustomize needs no cluster.)

const root = join(__dirname, '..', '..');
const DEPLOY = join(root, 'deploy');
const JOB = 'audio-webhooks';

/**
 * A kustomization of the test's own, in a temp folder, that names the repository's pieces by
 * relative path (kustomize refuses an absolute one): how a team's overlay combines them.
 */
function combination(
  resources: readonly string[],
  components: readonly string[],
  namespace?: string,
): string {
  const dir = mkdtempSync(join(tmpdir(), 'aw-kustomize-'));
  const from = (path: string) => relative(dir, join(DEPLOY, path));
  const kustomization = {
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    ...(namespace === undefined ? {} : { namespace }),
    resources: resources.map(from),
    components: components.map(from),
  };
  writeFileSync(join(dir, 'kustomization.yaml'), stringify(kustomization));
  return dir;
}

/** Every rendering the docs name: a folder of the repository, or a combination of its pieces. */
const RENDERINGS: readonly (readonly [name: string, folder: () => string])[] = [
  ['kubernetes', () => join(DEPLOY, 'kubernetes')],
  ['overlays/monitoring', () => join(DEPLOY, 'overlays', 'monitoring')],
  ['overlays/s3', () => join(DEPLOY, 'overlays', 's3')],
  ['overlays/production-example', () => join(DEPLOY, 'overlays', 'production-example')],
  [
    'overlays/s3 + components/monitoring',
    () => combination(['overlays/s3'], ['components/monitoring']),
  ],
  [
    'kubernetes + components/s3 + components/monitoring',
    () => combination(['kubernetes'], ['components/s3', 'components/monitoring']),
  ],
  [
    'kubernetes + components/monitoring + components/s3',
    () => combination(['kubernetes'], ['components/monitoring', 'components/s3']),
  ],
  [
    'overlays/production-example + components/s3',
    () => combination(['overlays/production-example'], ['components/s3']),
  ],
  [
    'kubernetes + components/forward-egress',
    () => combination(['kubernetes'], ['components/forward-egress']),
  ],
  [
    'overlays/production-example + components/forward-egress',
    () => combination(['overlays/production-example'], ['components/forward-egress']),
  ],
  // Into another namespace: set below the monitoring component, and beside it (where its own
  // transformers run before the namespace is set).
  ['other-ns: overlays/monitoring', () => combination(['overlays/monitoring'], [], 'other-ns')],
  [
    'other-ns: kubernetes + components/monitoring + components/s3',
    () => combination(['kubernetes'], ['components/monitoring', 'components/s3'], 'other-ns'),
  ],
];
const NAMES = RENDERINGS.map(([name]) => name);

const cache = new Map<string, Manifest[]>();
/** The rendering's objects, rendered once; throws (failing the test that asked) when kustomize does. */
function rendering(name: string): Manifest[] {
  const done = cache.get(name);
  if (done !== undefined) return done;
  const entry = RENDERINGS.find(([n]) => n === name);
  if (entry === undefined) throw new Error(`no rendering ${name}`);
  const manifests = renderFolder(entry[1]());
  cache.set(name, manifests);
  return manifests;
}

const ofKind = (manifests: readonly Manifest[], kind: string) =>
  manifests.filter((m) => m.kind === kind);
const podSpec = (d: Manifest) => (d.spec as { template: { spec: IPodSpec } }).template.spec;
const podLabels = (d: Manifest) =>
  (d.spec as { template: { metadata: { labels: Record<string, string> } } }).template.metadata
    .labels;
/** A KEDA trigger as the tests read it. */
interface Trigger {
  type: string;
  metadata: Record<string, string | undefined>;
  authenticationRef?: { name: string };
}
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// ---------------------------------------------------------------------------------------------
// Schemas: Kubernetes 1.32 and KEDA 2 (kubernetes-models); the Prometheus Operator's kinds, which
// have no package here, by a structural check of the fields their CRDs require of what is set.

const MODELS = {
  'v1/ConfigMap': ConfigMap,
  'v1/Service': Service,
  'v1/PersistentVolumeClaim': PersistentVolumeClaim,
  'apps/v1/Deployment': Deployment,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'keda.sh/v1alpha1/ScaledObject': ScaledObject,
  'keda.sh/v1alpha1/TriggerAuthentication': TriggerAuthentication,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
} as const;

const DURATION = /^(0|(\d+y)?(\d+w)?(\d+d)?(\d+h)?(\d+m)?(\d+s)?(\d+ms)?)$/;
const isStringMap = (value: unknown) =>
  value === undefined ||
  (typeof value === 'object' &&
    value !== null &&
    Object.values(value).every((v) => typeof v === 'string'));
const isDuration = (value: unknown) =>
  value === undefined || (typeof value === 'string' && value !== '' && DURATION.test(value));

function prometheusRuleProblems(spec: Record<string, unknown> | undefined): string[] {
  const groups = spec?.groups;
  if (!Array.isArray(groups) || groups.length === 0) return ['spec.groups: a non-empty array'];
  return (groups as Record<string, unknown>[]).flatMap((group, g) => {
    const at = `spec.groups[${g}]`;
    const rules = group.rules;
    return [
      ...(typeof group.name === 'string' && group.name !== '' ? [] : [`${at}.name: a string`]),
      ...(isDuration(group.interval) ? [] : [`${at}.interval: a duration`]),
      ...(Array.isArray(rules) ? [] : [`${at}.rules: an array`]),
      ...((Array.isArray(rules) ? rules : []) as Record<string, unknown>[]).flatMap((rule, r) => {
        const where = `${at}.rules[${r}]`;
        return [
          ...(typeof rule.expr === 'string' && rule.expr !== '' ? [] : [`${where}.expr: a string`]),
          ...((typeof rule.alert === 'string') !== (typeof rule.record === 'string')
            ? []
            : [`${where}: one of alert and record`]),
          ...(isDuration(rule.for) ? [] : [`${where}.for: a duration`]),
          ...(isStringMap(rule.labels) ? [] : [`${where}.labels: strings`]),
          ...(isStringMap(rule.annotations) ? [] : [`${where}.annotations: strings`]),
        ];
      }),
    ];
  });
}

function podMonitorProblems(spec: Record<string, unknown> | undefined): string[] {
  const selector = spec?.selector as { matchLabels?: unknown } | undefined;
  const endpoints = spec?.podMetricsEndpoints;
  return [
    ...(selector !== undefined && isStringMap(selector.matchLabels)
      ? []
      : ['spec.selector: a label selector']),
    ...(spec?.jobLabel === undefined || typeof spec.jobLabel === 'string'
      ? []
      : ['spec.jobLabel: a string']),
    ...(Array.isArray(endpoints) && endpoints.length > 0
      ? (endpoints as Record<string, unknown>[]).flatMap((e, i) => [
          ...(typeof e.port === 'string' ? [] : [`spec.podMetricsEndpoints[${i}].port: a name`]),
          ...(e.path === undefined || typeof e.path === 'string'
            ? []
            : [`spec.podMetricsEndpoints[${i}].path: a string`]),
          ...(isDuration(e.interval) && isDuration(e.scrapeTimeout)
            ? []
            : [`spec.podMetricsEndpoints[${i}]: interval and scrapeTimeout durations`]),
        ])
      : ['spec.podMetricsEndpoints: a non-empty array']),
  ];
}

const STRUCTURAL = {
  'monitoring.coreos.com/v1/PrometheusRule': prometheusRuleProblems,
  'monitoring.coreos.com/v1/PodMonitor': podMonitorProblems,
} as const;

/** Throws when the manifest is not valid against its kind's schema (or structural check). */
function validate(manifest: Manifest): void {
  const kind = `${manifest.apiVersion}/${manifest.kind}`;
  if (kind in STRUCTURAL) {
    const problems = STRUCTURAL[kind as keyof typeof STRUCTURAL](manifest.spec);
    if (problems.length > 0) throw new Error(`${manifest.metadata.name}: ${problems.join('; ')}`);
    return;
  }
  const Model = MODELS[kind as keyof typeof MODELS] as
    (typeof MODELS)[keyof typeof MODELS] | undefined;
  if (Model === undefined) throw new Error(`no schema for ${kind}`);
  new Model(manifest as never).validate();
}

it('the validation has teeth: a probe without a port, a non-string KEDA threshold, a policy port of the wrong type', () => {
  const base = rendering('kubernetes');
  const receiver = base.find((m) => m.metadata.name === 'audio-webhooks-receiver');
  const broken = structuredClone(receiver) as unknown as { spec: { template: { spec: IPodSpec } } };
  const first = broken.spec.template.spec.containers[0];
  if (first?.livenessProbe?.httpGet === undefined) throw new Error('the receiver has no liveness');
  delete (first.livenessProbe.httpGet as { port?: unknown }).port;
  expect(() => {
    new Deployment(broken as never).validate();
  }).toThrow(/port/);
  const scaled = structuredClone(ofKind(base, 'ScaledObject')[0]) as never as {
    spec: { triggers: { metadata: Record<string, unknown> }[] };
  };
  const [trigger] = scaled.spec.triggers;
  if (trigger === undefined) throw new Error('no trigger');
  trigger.metadata.listLength = 50;
  expect(() => {
    new ScaledObject(scaled as never).validate();
  }).toThrow(/listLength/);
  const auth = structuredClone(ofKind(base, 'TriggerAuthentication')[0]) as never as {
    spec: { secretTargetRef: Record<string, unknown>[] };
  };
  delete auth.spec.secretTargetRef[0]?.key;
  expect(() => {
    new TriggerAuthentication(auth as never).validate();
  }).toThrow(/key/);
  const policy = structuredClone(
    ofKind(base, 'NetworkPolicy').find((m) => m.metadata.name.endsWith('-receiver-ingress')),
  ) as never as {
    spec: { ingress: { ports: { port: unknown }[] }[] };
  };
  const [rule] = policy.spec.ingress;
  if (rule?.ports[0] === undefined) throw new Error('no ingress port');
  rule.ports[0].port = { name: 'http' };
  expect(() => {
    new NetworkPolicy(policy as never).validate();
  }).toThrow(/port/);
});

it("the structural check of the Operator's kinds has teeth too: a bad `for`, a rule without expr, a port by number", () => {
  const rule = structuredClone(ofKind(rendering('overlays/monitoring'), 'PrometheusRule')[0]);
  if (rule === undefined) throw new Error('no PrometheusRule');
  const [group] = (rule.spec as { groups: { rules: Record<string, unknown>[] }[] }).groups;
  const [first, second] = group?.rules ?? [];
  if (first === undefined || second === undefined) throw new Error('fewer than two rules');
  first.for = '5 minutes';
  delete second.expr;
  expect(() => {
    validate(rule);
  }).toThrow(/rules\[0\]\.for: a duration; .*rules\[1\]\.expr: a string/);
  expect(() => {
    validate({
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'PodMonitor',
      metadata: { name: 'broken' },
      spec: { selector: { matchLabels: {} }, podMetricsEndpoints: [{ port: 9464 }] },
    });
  }).toThrow(/port: a name/);
});

// ---------------------------------------------------------------------------------------------
// PromQL, read as far as scoping needs: its vector selectors with their label matchers, its
// aggregations with their `by`/`without`, its `on`/`ignoring`. Strings, ranges and comments are
// skipped whole, so a label value or a Grafana variable never reads as a metric.

interface Matcher {
  readonly label: string;
  readonly op: string;
  readonly value: string;
}
interface Selector {
  readonly metric: string | undefined;
  readonly matchers: readonly Matcher[];
}
interface Clause {
  readonly clause: string;
  readonly labels: readonly string[];
}
type Token =
  | { readonly kind: 'word'; readonly text: string }
  | { readonly kind: 'braces'; readonly matchers: readonly Matcher[] }
  | { readonly kind: '(' | ')' | 'other' };

const AGGREGATIONS = new Set([
  'sum',
  'min',
  'max',
  'avg',
  'group',
  'stddev',
  'stdvar',
  'count',
  'count_values',
  'bottomk',
  'topk',
  'quantile',
]);
const GROUPINGS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
const KEYWORDS = new Set([...GROUPINGS, 'bool', 'offset', 'and', 'or', 'unless', 'atan2']);
const STRING = String.raw`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + '`[^`]*`';
const TOKEN = new RegExp(
  String.raw`\s+|#[^\n]*|${STRING}|\[[^\]]*\]|\{(?:[^}"'` +
    '`' +
    String.raw`]|${STRING})*\}|[A-Za-z_:][\w:]*|\d[\w.]*|\.\d\w*|[()]|.`,
  'gy',
);
const MATCHER = new RegExp(String.raw`([A-Za-z_]\w*)\s*(=~|!~|!=|=)\s*(${STRING})`, 'g');

function tokenize(expr: string): Token[] {
  const tokens: Token[] = [];
  for (const [text] of expr.matchAll(TOKEN)) {
    if (/^\s/.test(text) || text.startsWith('#')) continue;
    if (text.startsWith('{')) {
      const matchers = [...text.matchAll(MATCHER)].map(([, label = '', op = '', value = '']) => ({
        label,
        op,
        value: value.slice(1, -1),
      }));
      tokens.push({ kind: 'braces', matchers });
    } else if (/^[A-Za-z_:]/.test(text)) tokens.push({ kind: 'word', text });
    else if (text === '(' || text === ')') tokens.push({ kind: text });
    else tokens.push({ kind: 'other' });
  }
  return tokens;
}

function scan(expr: string) {
  const tokens = tokenize(expr);
  const selectors: Selector[] = [];
  const aggregations: { op: string; clause: Clause | undefined }[] = [];
  const joins: Clause[] = [];
  /** The words between the parenthesis at `open` and its close. */
  const labelsAt = (open: number) => {
    const labels: string[] = [];
    let at = open + 1;
    for (; at < tokens.length && tokens[at]?.kind !== ')'; at++) {
      const token = tokens[at];
      if (token?.kind === 'word') labels.push(token.text);
    }
    return { labels, end: at };
  };
  const closing = (open: number) => {
    let depth = 0;
    for (let at = open; at < tokens.length; at++) {
      if (tokens[at]?.kind === '(') depth++;
      if (tokens[at]?.kind === ')' && --depth === 0) return at;
    }
    return tokens.length;
  };
  const isWord = (token: Token | undefined, ...words: string[]) =>
    token?.kind === 'word' && words.includes(token.text);
  for (let at = 0; at < tokens.length; at++) {
    const token = tokens[at];
    const next = tokens[at + 1];
    if (token?.kind === 'braces') {
      selectors.push({ metric: undefined, matchers: token.matchers });
      continue;
    }
    if (token?.kind !== 'word') continue;
    if (GROUPINGS.has(token.text)) {
      if (next?.kind !== '(') continue;
      const { labels, end } = labelsAt(at + 1);
      if (token.text === 'on' || token.text === 'ignoring')
        joins.push({ clause: token.text, labels });
      at = end;
      continue;
    }
    if (KEYWORDS.has(token.text)) continue;
    if (AGGREGATIONS.has(token.text) && (next?.kind === '(' || isWord(next, 'by', 'without'))) {
      let clause: Clause | undefined;
      if (next?.kind === 'word') clause = { clause: next.text, labels: labelsAt(at + 2).labels };
      else {
        const end = closing(at + 1);
        const after = tokens[end + 1];
        if (after?.kind === 'word' && isWord(after, 'by', 'without'))
          clause = { clause: after.text, labels: labelsAt(end + 2).labels };
      }
      aggregations.push({ op: token.text, clause });
      continue;
    }
    if (next?.kind === '(') continue; // a function
    selectors.push({ metric: token.text, matchers: next?.kind === 'braces' ? next.matchers : [] });
    if (next?.kind === 'braces') at++;
  }
  return { selectors, aggregations, joins };
}

/**
 * What lets an expression reach past one installation, as problems (none: it is scoped). Every
 * selector names the job; with `namespace` every selector also names that namespace (KEDA's
 * queries, Grafana's panels), without it every aggregation and join keeps the namespace label
 * (alerts: one alert per installation, whichever installations Prometheus scrapes).
 */
function unscoped(expr: string, scope: { job: string; namespace?: string }): string[] {
  const { selectors, aggregations, joins } = scan(expr);
  const has = (s: Selector, label: string, value: string) =>
    s.matchers.some((m) => m.label === label && m.op === '=' && m.value === value);
  const problems = selectors.flatMap((s) => {
    const name = s.metric ?? '{…}';
    return [
      ...(has(s, 'job', scope.job) ? [] : [`${name}: no job="${scope.job}"`]),
      ...(scope.namespace === undefined || has(s, 'namespace', scope.namespace)
        ? []
        : [`${name}: no namespace="${scope.namespace}"`]),
    ];
  });
  if (scope.namespace !== undefined) return problems;
  return [
    ...problems,
    ...aggregations.flatMap(({ op, clause }) =>
      (clause?.clause === 'by' && clause.labels.includes('namespace')) ||
      (clause?.clause === 'without' && !clause.labels.includes('namespace'))
        ? []
        : [
            `${op} ${clause === undefined ? '' : `${clause.clause} (${clause.labels.join(', ')}) `}merges namespaces`,
          ],
    ),
    ...joins.flatMap(({ clause, labels }) =>
      (clause === 'on') === labels.includes('namespace')
        ? []
        : [`${clause} (${labels.join(', ')}) matches across namespaces`],
    ),
  ];
}

it('the PromQL scope check has teeth', () => {
  expect(unscoped('max(webhook_queue_backlog)', { job: JOB, namespace: 'a' })).toEqual([
    'webhook_queue_backlog: no job="audio-webhooks"',
    'webhook_queue_backlog: no namespace="a"',
  ]);
  expect(
    unscoped('max(webhook_queue_backlog{job="audio-webhooks", namespace="a"}) or vector(0)', {
      job: JOB,
      namespace: 'a',
    }),
  ).toEqual([]);
  expect(unscoped('webhook_redis_up == 0', { job: JOB })).toEqual([
    'webhook_redis_up: no job="audio-webhooks"',
  ]);
  expect(unscoped('sum by (job) (rate(x{job="audio-webhooks"}[5m])) > 0', { job: JOB })).toEqual([
    'sum by (job) merges namespaces',
  ]);
  expect(unscoped('count(up{job="audio-webhooks"} == 1)', { job: JOB })).toEqual([
    'count merges namespaces',
  ]);
  expect(
    unscoped('a{job="audio-webhooks"} and on (job, instance) b{job="audio-webhooks", x="on (y)"}', {
      job: JOB,
    }),
  ).toEqual(['on (job, instance) matches across namespaces']);
  expect(
    unscoped(
      'sum(rate(x{job="audio-webhooks"}[5m])) by (namespace, job) / ignoring (le) max without (le) (y{job="audio-webhooks"})',
      { job: JOB },
    ),
  ).toEqual([]);
  // A label value, a range and a Grafana variable are not selectors.
  expect(
    unscoped('histogram_quantile(0.5, sum by (le) (rate(x{job="$job"}[$__rate_interval])))', {
      job: '$job',
      namespace: '$namespace',
    }),
  ).toEqual(['x: no namespace="$namespace"']);
});

// ---------------------------------------------------------------------------------------------
// NetworkPolicies, read as the API server applies them: a pod is isolated in a direction once a
// policy of that type selects it, and then reachable only as some selecting policy's rules say.

interface Policy {
  readonly name: string;
  readonly namespace: string | undefined;
  readonly spec: INetworkPolicySpec;
}

function selects(
  selector: { matchLabels?: Record<string, string>; matchExpressions?: unknown[] },
  labels: Record<string, string>,
): boolean {
  if ((selector.matchExpressions ?? []).length > 0) throw new Error('matchExpressions: teach me');
  return Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
}

function policiesOf(manifests: readonly Manifest[], pod: Manifest, type: 'Ingress' | 'Egress') {
  return ofKind(manifests, 'NetworkPolicy')
    .map((m): Policy => ({
      name: m.metadata.name,
      namespace: m.metadata.namespace,
      spec: m.spec as unknown as INetworkPolicySpec,
    }))
    .filter(
      (p) =>
        p.namespace === pod.metadata.namespace &&
        selects(p.spec.podSelector, podLabels(pod)) &&
        (p.spec.policyTypes ?? ['Ingress']).includes(type),
    );
}

/** A peer as a line: `namespace label / pod label`, `ipBlock cidr except …`, or `anyone`. */
function peer(p: INetworkPolicyPeer): string {
  if (p.ipBlock !== undefined)
    return `ipBlock ${p.ipBlock.cidr}${p.ipBlock.except ? ` except ${p.ipBlock.except.join(' ')}` : ''}`;
  const labels = (s: { matchLabels?: Record<string, string> } | undefined) =>
    s === undefined
      ? '(this namespace)'
      : Object.entries(s.matchLabels ?? {})
          .map(([k, v]) => `${k}=${v}`)
          .join(',') || '(any)';
  return `${labels(p.namespaceSelector)} / ${labels(p.podSelector)}`;
}

type PolicyPort = NonNullable<NonNullable<INetworkPolicySpec['ingress']>[number]['ports']>[number];
const samePort = (rule: PolicyPort, port: { name?: string; containerPort: number }) =>
  rule.port === undefined || rule.port === port.name || rule.port === port.containerPort;

/** Who may open each of the pod's container ports, by port name. */
function admitted(manifests: readonly Manifest[], pod: Manifest): Record<string, string[]> {
  const rules = policiesOf(manifests, pod, 'Ingress').flatMap((p) => p.spec.ingress ?? []);
  const ports = podSpec(pod).containers.flatMap((c) => c.ports ?? []);
  return Object.fromEntries(
    ports.map((port) => [
      port.name ?? String(port.containerPort),
      rules
        .filter(
          (r) => (r.ports ?? []).length === 0 || (r.ports ?? []).some((p) => samePort(p, port)),
        )
        .flatMap((r) => ((r.from ?? []).length === 0 ? ['anyone'] : (r.from ?? []).map(peer))),
    ]),
  );
}

const INGRESS_CONTROLLER =
  'kubernetes.io/metadata.name=ingress-nginx / app.kubernetes.io/name=ingress-nginx';
const MONITORING = 'kubernetes.io/metadata.name=monitoring / app.kubernetes.io/name=prometheus';
const KUBE_DNS = 'kubernetes.io/metadata.name=kube-system / k8s-app=kube-dns';
/** The ranges an HTTPS egress rule to the internet leaves out: nothing internal by that door. */
const PRIVATE = [
  '10.0.0.0/8',
  '100.64.0.0/10',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '169.254.0.0/16',
];

/** Egress rules of the pod, as `port/protocol → peer` lines. */
function egress(manifests: readonly Manifest[], pod: Manifest): string[] {
  return policiesOf(manifests, pod, 'Egress')
    .flatMap((p) => p.spec.egress ?? [])
    .flatMap((rule) => {
      const ports = (rule.ports ?? []).map(
        (p) => `${String(p.port ?? '*')}/${p.protocol ?? 'TCP'}`,
      );
      const peers = (rule.to ?? []).map(peer);
      return (ports.length === 0 ? ['*'] : ports).flatMap((port) =>
        (peers.length === 0 ? ['anyone'] : peers).map((to) => `${port} → ${to}`),
      );
    });
}

// ---------------------------------------------------------------------------------------------
// The properties, for every rendering.

describe.each(NAMES)('%s', (name) => {
  it('renders, every object valid against its schema, all in one namespace', () => {
    const manifests = rendering(name);
    for (const manifest of manifests) {
      expect(() => {
        validate(manifest);
      }).not.toThrow();
    }
    // Every object namespaced, in the same one (a PodMonitor in another selects no pod). Strict:
    // toEqual would take [name, undefined] for [name].
    const namespaces = new Set(manifests.map((m) => m.metadata.namespace ?? '(none)'));
    expect([...namespaces]).toStrictEqual([expect.stringMatching(/^[a-z0-9-]+$/)]);
  });

  it('1. scaling has one owner: no Deployment that an HPA or a ScaledObject scales sets replicas', () => {
    const manifests = rendering(name);
    const scaled = [
      ...ofKind(manifests, 'HorizontalPodAutoscaler'),
      ...ofKind(manifests, 'ScaledObject'),
    ].map((a) => (a.spec as { scaleTargetRef: { name: string } }).scaleTargetRef.name);
    const deployments = ofKind(manifests, 'Deployment');
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual([...scaled].sort());
    expect(
      deployments.filter((d) => d.spec?.replicas !== undefined).map((d) => d.metadata.name),
    ).toEqual([]);
  });

  it('2. every pod is isolated: the public port from the ingress controller only, the internal and health ports from monitoring only', () => {
    const manifests = rendering(name);
    const pods = Object.fromEntries(
      ofKind(manifests, 'Deployment').map((d) => [d.metadata.name, admitted(manifests, d)]),
    );
    expect(pods).toEqual({
      'audio-webhooks-receiver': { http: [INGRESS_CONTROLLER], internal: [MONITORING] },
      'audio-webhooks-worker': { health: [MONITORING] },
    });
  });

  it('2. egress to named places and ports only: DNS and Redis for both, HTTPS outside the private ranges for the workers (and the receivers with S3)', () => {
    const manifests = rendering(name);
    const s3 = ofKind(manifests, 'ConfigMap')[0]?.data?.AUDIO_STORE === 's3';
    for (const deployment of ofKind(manifests, 'Deployment')) {
      expect(policiesOf(manifests, deployment, 'Egress')).not.toEqual([]);
      const lines = egress(manifests, deployment);
      // No rule opens every port or every destination.
      expect(lines.filter((line) => line.startsWith('*') || line.endsWith('anyone'))).toEqual([]);
      expect(lines).toEqual(
        expect.arrayContaining([`53/UDP → ${KUBE_DNS}`, `53/TCP → ${KUBE_DNS}`]),
      );
      expect(lines.filter((line) => line.startsWith('6379/TCP'))).not.toEqual([]);
      const https = lines.filter((line) => line.startsWith('443/'));
      if (podLabels(deployment)['app.kubernetes.io/component'] === 'receiver' && !s3) {
        // The receiver fetches nothing: Redis and DNS are all it reaches. With the audio in a
        // bucket its inspector reads the archive there.
        expect(https).toEqual([]);
      } else {
        expect(https).toEqual([`443/TCP → ipBlock 0.0.0.0/0 except ${PRIVATE.join(' ')}`]);
      }
    }
  });

  it('2. TRUST_PROXY believes no whole private range, nor any hop whatever its address', () => {
    const [configMap] = ofKind(rendering(name), 'ConfigMap');
    const trusted = (configMap?.data?.TRUST_PROXY ?? '').split(',').map((s) => s.trim());
    for (const entry of trusted) {
      expect({ entry, named: entry === 'loopback' || ipaddr.isValidCIDR(entry) }).toEqual({
        entry,
        named: true,
      });
      if (entry === 'loopback') continue;
      const [address, bits] = ipaddr.parseCIDR(entry);
      for (const range of PRIVATE) {
        const [network, prefix] = ipaddr.parseCIDR(range);
        // A CIDR that holds a whole private range trusts every pod in it.
        const wider = address.kind() === network.kind() && bits <= prefix;
        expect({ entry, holds: wider && network.match(address, bits) }).toEqual({
          entry,
          holds: false,
        });
      }
    }
  });

  it("3. no ConfigMap holds a credential; Redis is reached over TLS, its password from a Secret; 12. the receivers' Secret reaches no worker, and no Secret is optional", () => {
    const manifests = rendering(name);
    for (const configMap of ofKind(manifests, 'ConfigMap')) {
      const entries = Object.entries(configMap.data ?? {});
      expect(
        entries
          .filter(
            ([key, value]) =>
              /PASSWORD|SECRET|TOKEN|CREDENTIAL|PRIVATE|ACCESS_KEY|FORWARD_URLS/.test(key) ||
              /^whsec_/.test(value) ||
              /[a-z][a-z0-9+.-]*:\/\/[^/\s@]*@/i.test(value),
          )
          .map(([key]) => key),
      ).toEqual([]);
      expect(configMap.data?.REDIS_URL).toMatch(/^rediss:\/\//);
    }
    for (const deployment of ofKind(manifests, 'Deployment')) {
      const receiver = podLabels(deployment)['app.kubernetes.io/component'] === 'receiver';
      for (const container of podSpec(deployment).containers) {
        const secrets = (container.envFrom ?? []).flatMap((from) =>
          from.secretRef === undefined ? [] : [from.secretRef],
        );
        expect(secrets).toContainEqual({ name: 'audio-webhooks-redis' });
        // WEBHOOK_SECRETS and ADMIN_PASSWORD: the receivers' own Secret, which no worker mounts.
        expect(secrets.some((ref) => ref.name === 'audio-webhooks-receiver')).toBe(receiver);
        // A missing Secret stops the pod visibly (CreateContainerConfigError), S3's included.
        expect(secrets.filter((ref) => ref.optional !== undefined)).toEqual([]);
        expect((container.env ?? []).filter((e) => /PASSWORD|SECRET/.test(e.name))).toEqual([]);
      }
    }
  });

  it('6. KEDA and every alert are scoped to one installation: its job, its namespace', () => {
    const manifests = rendering(name);
    const prefix = ofKind(manifests, 'ConfigMap')[0]?.data?.QUEUE_PREFIX;
    for (const scaled of ofKind(manifests, 'ScaledObject')) {
      const namespace = scaled.metadata.namespace ?? '(none)';
      const triggers = (scaled.spec as { triggers: Trigger[] }).triggers;
      // Redis's wait lists of this installation's prefix, on its Redis: a Service named with its
      // own namespace (KEDA's operator runs in another), or a host outside the cluster.
      for (const { metadata } of triggers.filter((t) => t.type === 'redis')) {
        expect(metadata.listName).toMatch(new RegExp(`^${escape(prefix ?? '')}:\\w+:wait$`));
        const host = metadata.address?.split(':')[0] ?? '';
        expect({
          host,
          scoped: !host.includes('.svc') || host.endsWith(`.${namespace}.svc`),
        }).toEqual({
          host,
          scoped: true,
        });
      }
      for (const { metadata } of triggers.filter((t) => t.type === 'prometheus')) {
        expect({
          query: metadata.query,
          problems: unscoped(metadata.query ?? '', { job: JOB, namespace }),
        }).toEqual({ query: metadata.query, problems: [] });
      }
    }
    const rules = ofKind(manifests, 'PrometheusRule').flatMap((rule) =>
      (rule.spec as { groups: { rules: { alert: string; expr: string }[] }[] }).groups.flatMap(
        (g) => g.rules,
      ),
    );
    for (const { alert, expr } of rules) {
      expect({ alert, problems: unscoped(expr, { job: JOB }) }).toEqual({ alert, problems: [] });
    }
  });

  it('7. KEDA falls back when the backlog is unknown: an empty answer is an error, not a zero', () => {
    const [scaled] = ofKind(rendering(name), 'ScaledObject');
    const spec = scaled?.spec as {
      minReplicaCount: number;
      fallback?: { failureThreshold: number; replicas: number };
      triggers: Trigger[];
    };
    expect(spec.fallback?.failureThreshold).toBeGreaterThanOrEqual(1);
    expect(spec.fallback?.replicas).toBeGreaterThan(spec.minReplicaCount);
    // The deliveries' backlog from Prometheus: with no series (no scrape), KEDA's default reads 0
    // and holds the workers at their minimum; false makes it an error, and the fallback applies.
    for (const { metadata } of spec.triggers.filter((t) => t.type === 'prometheus'))
      if (metadata.query?.includes('webhook_queue_backlog') === true)
        expect(metadata.ignoreNullValues).toBe('false');
  });

  it('10. the workers scale on the backlog with or without Prometheus: a Redis trigger always, a Prometheus one only where a PodMonitor feeds it', () => {
    const manifests = rendering(name);
    const [scaled] = ofKind(manifests, 'ScaledObject');
    const triggers = (scaled?.spec as { triggers: Trigger[] }).triggers;
    const prefix = ofKind(manifests, 'ConfigMap')[0]?.data?.QUEUE_PREFIX ?? '';
    expect(triggers.filter((t) => t.type === 'redis').map((t) => t.metadata.listName)).toEqual([
      `${prefix}:deliveries:wait`,
      `${prefix}:forwards:wait`,
    ]);
    // Each Redis trigger's credentials: a TriggerAuthentication of the rendering, from a Secret.
    for (const trigger of triggers.filter((t) => t.type === 'redis')) {
      const auth = ofKind(manifests, 'TriggerAuthentication').find(
        (m) => m.metadata.name === trigger.authenticationRef?.name,
      );
      expect(auth?.spec?.secretTargetRef).toEqual([
        { parameter: 'password', name: 'audio-webhooks-redis', key: 'REDIS_PASSWORD' },
      ]);
    }
    const prometheus = triggers.some((t) => t.type === 'prometheus');
    expect({ prometheus, monitors: ofKind(manifests, 'PodMonitor').length }).toEqual({
      prometheus,
      monitors: prometheus ? 1 : 0,
    });
    // The Operator's kinds come together, with the component, or not at all: a rendering without
    // them applies to a cluster without its CRDs.
    const operator = manifests.filter((m) => m.apiVersion.startsWith('monitoring.coreos.com/'));
    expect(operator.map((m) => m.kind).sort()).toEqual(
      prometheus ? ['PodMonitor', 'PrometheusRule'] : [],
    );
  });

  it('14. Kubernetes never kills a clean shutdown: grace > preStop + SHUTDOWN_TIMEOUT_MS; a receiver waits 15 s for the load balancer', () => {
    const manifests = rendering(name);
    const shutdownMs = Number(ofKind(manifests, 'ConfigMap')[0]?.data?.SHUTDOWN_TIMEOUT_MS);
    expect(shutdownMs).toBeGreaterThan(0);
    for (const deployment of ofKind(manifests, 'Deployment')) {
      const spec = podSpec(deployment);
      for (const container of spec.containers) {
        const command = container.lifecycle?.preStop?.exec?.command ?? [];
        const preStop = command[0] === 'sleep' ? Number(command[1]) : 0;
        if (podLabels(deployment)['app.kubernetes.io/component'] === 'receiver')
          expect(preStop).toBeGreaterThanOrEqual(15);
        expect(spec.terminationGracePeriodSeconds).toBeGreaterThan(preStop + shutdownMs / 1000);
      }
    }
  });

  it('11. a default deny holds every pod of the namespace, both ways', () => {
    const manifests = rendering(name);
    const denies = ofKind(manifests, 'NetworkPolicy').filter((m) => {
      const spec = m.spec as unknown as INetworkPolicySpec;
      return (
        Object.keys(spec.podSelector).length === 0 &&
        spec.ingress === undefined &&
        spec.egress === undefined
      );
    });
    expect(
      denies.map((m) => (m.spec as unknown as INetworkPolicySpec).policyTypes?.slice().sort()),
    ).toEqual([['Egress', 'Ingress']]);
  });

  it('8. pods spread over nodes and zones; scratch space bounded; the claim names its storage class', () => {
    const manifests = rendering(name);
    for (const deployment of ofKind(manifests, 'Deployment')) {
      const spec = podSpec(deployment);
      const spread = spec.topologySpreadConstraints ?? [];
      expect(spread.map((c) => c.topologyKey).sort()).toEqual([
        'kubernetes.io/hostname',
        'topology.kubernetes.io/zone',
      ]);
      for (const constraint of spread) {
        // Among the pods of its own Deployment: receivers apart from receivers.
        expect(constraint.labelSelector).toEqual({ matchLabels: podLabels(deployment) });
        expect(constraint.maxSkew).toBe(1);
      }
      for (const volume of spec.volumes ?? []) {
        if (volume.emptyDir !== undefined)
          expect({ volume: volume.name, sizeLimit: volume.emptyDir.sizeLimit }).toEqual({
            volume: volume.name,
            sizeLimit: expect.stringMatching(/^\d+(Mi|Gi)$/),
          });
      }
    }
    for (const claim of ofKind(manifests, 'PersistentVolumeClaim')) {
      expect(claim.spec?.storageClassName).toEqual(expect.stringMatching(/^[a-z0-9.-]+$/));
    }
  });
});

// ---------------------------------------------------------------------------------------------
// The pieces that combine, and what each combination holds.

it('7. the components combine with any overlay: S3 with monitoring has a PodMonitor and no claim', () => {
  for (const name of [
    'overlays/s3 + components/monitoring',
    'kubernetes + components/s3 + components/monitoring',
    'kubernetes + components/monitoring + components/s3',
  ]) {
    const manifests = rendering(name);
    expect({ name, monitors: ofKind(manifests, 'PodMonitor').length }).toEqual({
      name,
      monitors: 1,
    });
    expect({ name, claims: ofKind(manifests, 'PersistentVolumeClaim').length }).toEqual({
      name,
      claims: 0,
    });
    expect(ofKind(manifests, 'ConfigMap')[0]?.data?.AUDIO_STORE).toBe('s3');
  }
  // The same objects whichever order the components come in.
  const kinds = (name: string) =>
    rendering(name)
      .map((m) => `${m.kind}/${m.metadata.name}`)
      .sort();
  expect(kinds('kubernetes + components/monitoring + components/s3')).toEqual(
    kinds('kubernetes + components/s3 + components/monitoring'),
  );
});

it("10. a rendering into another namespace queries that one and reads its Redis: none of the base's namespace left in KEDA's triggers", () => {
  for (const name of [
    'other-ns: overlays/monitoring',
    'other-ns: kubernetes + components/monitoring + components/s3',
  ]) {
    const [scaled] = ofKind(rendering(name), 'ScaledObject');
    expect(scaled?.metadata.namespace).toBe('other-ns');
    const triggers = (scaled?.spec as { triggers: Trigger[] }).triggers;
    expect(triggers.map((t) => t.type).sort()).toEqual([
      'prometheus',
      'prometheus',
      'redis',
      'redis',
    ]);
    const text = JSON.stringify(triggers);
    expect({ name, base: text.includes('namespace=\\"audio-webhooks\\"') }).toEqual({
      name,
      base: false,
    });
    expect(text).not.toContain('.audio-webhooks.svc');
    expect(text).not.toContain('$(');
    for (const { metadata } of triggers.filter((t) => t.type === 'prometheus'))
      expect(metadata.query).toContain('namespace="other-ns"');
    for (const { metadata } of triggers.filter((t) => t.type === 'redis'))
      expect(metadata.address).toBe('redis.other-ns.svc:6379');
  }
});

it('11. components/forward-egress opens the brokers to the workers only, by name and port', () => {
  const base = rendering('kubernetes');
  for (const name of [
    'kubernetes + components/forward-egress',
    'overlays/production-example + components/forward-egress',
  ]) {
    const manifests = rendering(name);
    const pod = (component: string) =>
      ofKind(manifests, 'Deployment').find(
        (d) => podLabels(d)['app.kubernetes.io/component'] === component,
      ) as Manifest;
    expect(egress(manifests, pod('worker'))).toEqual(
      expect.arrayContaining([
        '4222/TCP → kubernetes.io/metadata.name=messaging / app.kubernetes.io/name=nats',
        '5672/TCP → kubernetes.io/metadata.name=messaging / app.kubernetes.io/name=rabbitmq',
      ]),
    );
    const policy = ofKind(manifests, 'NetworkPolicy').find(
      (m) => m.metadata.name === 'audio-webhooks-forward-egress',
    );
    expect(policy?.metadata.namespace).toBe(pod('worker').metadata.namespace);
    // The receivers send nothing: their egress is what it was.
    const receiver = ofKind(base, 'Deployment').find((d) => d.metadata.name.endsWith('-receiver'));
    if (name.startsWith('kubernetes') && receiver !== undefined)
      expect(egress(manifests, pod('receiver'))).toEqual(egress(base, receiver));
  }
  // Documented beside FORWARD_URLS.
  const forwarding = readFileSync(join(root, 'docs', 'forwarding.md'), 'utf8');
  expect(forwarding).toContain('deploy/components/forward-egress');
});

describe('the production example (deploy/overlays/production-example)', () => {
  const NAME = 'overlays/production-example';
  const FILE = join(DEPLOY, 'overlays', 'production-example', 'kustomization.yaml');

  it('8. images pinned by digest', () => {
    const images = ofKind(rendering(NAME), 'Deployment').flatMap((d) =>
      podSpec(d).containers.map((c) => c.image),
    );
    expect(images).not.toEqual([]);
    for (const image of images) expect(image).toMatch(/^[\w./-]+@sha256:[0-9a-f]{64}$/);
  });

  it("2. TRUST_PROXY is the ingress controller's range; 3. REDIS_URL names the server only, over TLS", () => {
    const data = ofKind(rendering(NAME), 'ConfigMap')[0]?.data ?? {};
    expect(data.TRUST_PROXY).toMatch(/^[\d.]+\/\d+(,[\d.]+\/\d+)*$/);
    expect(data.REDIS_URL).toMatch(/^rediss:\/\/[^@]+$/);
  });

  it("6. KEDA's queries follow the overlay's namespace", () => {
    const [scaled] = ofKind(rendering(NAME), 'ScaledObject');
    expect(scaled?.metadata.namespace).not.toBe('audio-webhooks');
    const queries = (scaled?.spec as { triggers: Trigger[] }).triggers
      .filter((t) => t.type === 'prometheus')
      .map((t) => t.metadata.query);
    expect(queries).not.toEqual([]);
    for (const query of queries)
      expect(query).toContain(`namespace="${scaled?.metadata.namespace ?? ''}"`);
  });

  it('docs/operations.md, "Deploying", shows it as it is', () => {
    const docs = readFileSync(join(root, 'docs', 'operations.md'), 'utf8');
    const section = docs.slice(docs.indexOf('\n## Deploying'));
    const block =
      /```yaml\n# deploy\/overlays\/production-example\/kustomization\.yaml\n([\s\S]*?)```/.exec(
        section,
      )?.[1];
    expect(block).toBe(readFileSync(FILE, 'utf8'));
  });
});

it('6. Grafana: every panel reads one job and one namespace, the variables the dashboard offers', () => {
  const dashboard = JSON.parse(
    readFileSync(join(DEPLOY, 'grafana', 'audio-webhooks.json'), 'utf8'),
  ) as {
    templating: { list: { name: string; query?: { query: string } }[] };
    panels: { title: string; targets?: { expr: string }[] }[];
  };
  expect(dashboard.templating.list.map((v) => v.name)).toEqual(['datasource', 'job', 'namespace']);
  for (const panel of dashboard.panels) {
    for (const { expr } of panel.targets ?? []) {
      expect({
        panel: panel.title,
        expr,
        problems: unscoped(expr, { job: '$job', namespace: '$namespace' }),
      }).toEqual({
        panel: panel.title,
        expr,
        problems: [],
      });
    }
  }
});
