/**
 * Jest: ts-jest for TypeScript, one private Redis for the whole run
 * (test/helpers/suite/global-setup). test/ is grouped by feature as src/ is (test/forwarding/
 * tests src/forwarding/), pure and integration tests side by side. Two projects, which `npm test`
 * runs together: `quick` (`npm run test:quick`, the loop while editing) and `rest`. The quick set
 * is the files QUICK names, by folder: the pure tests and the integration tests that need nothing
 * but Redis. Any other test file, a new one included, is in `rest`, so it runs in the whole suite
 * until it is listed here. `rest` holds those that need Ceph's gateway, Chromium, Prometheus,
 * kubectl, podman-compose, NATS or RabbitMQ (scripts/test-prerequisites.js provides them), and the
 * slowest Redis-only ones, which would take the quick set past 3 minutes.
 */
// eslint-disable-next-line no-undef, @typescript-eslint/no-require-imports -- CommonJS config file
const { availableParallelism } = require('node:os');

const QUICK = {
  archive: ['archive', 'archive-stage', 'replay-confirm', 'shared-volume'],
  cli: ['print'],
  config: ['config', 'open-file-limit', 'redis-password', 'variable-names'],
  docs: ['docs-pages', 'readme', 'settings-docs'],
  download: [
    'audio-download',
    'download-release',
    'guarded-agent',
    'ip-policy',
    'open-download',
    'open-download-meter',
    'retry-policy',
  ],
  forwarding: [
    'attempt-destination',
    'destination-board',
    'destinations',
    'forward-config',
    'forward-message',
    'forward-signer',
    'message-filter',
  ],
  history: ['entry-codec', 'history-and-cli', 'redis-footprint'],
  hooks: ['custom-event-schemas', 'custom-events', 'send-custom-event'],
  inspector: ['inspector-views'],
  provider: ['provider-pure', 'tts-cache-hosts', 'tts-cache-lease'],
  'provider-spec': ['parse-event', 'signature-vectors', 'verify-signature'],
  queue: ['concurrency', 'dedupe-mark', 'delivery-queue-batch', 'duplicate-race'],
  receiver: ['guess-key', 'serve', 'signature-tolerance', 'webhook-route'],
  redis: ['redis-errors', 'redis-full', 'redis-outage', 'redis-replicas', 'write-gate'],
  repository: ['bench-ratios', 'build-current', 'layout', 'test-prerequisites', 'test-redis'],
  sandbox: ['sandbox-settings'],
  service: ['graceful-shutdown', 'shutdown', 'shutdown-stalls'],
  soak: ['soak-checker', 'soak-parts', 'soak-plan', 'soak-report'],
  storage: ['file-name', 'local-audio-store', 'write-batched'],
  telemetry: ['log-format', 'trace-context', 'tracing'],
  util: ['cpu-quota', 'deadline', 'describe-error', 'group-commit'],
  worker: [
    'liveness',
    'timeline-steps',
    'reserve-drain',
    'shard-concurrency',
    'worker-liveness',
    'worker-metrics',
  ],
};

/** The quick set's files, as paths under test/ without `.test.ts`. */
const QUICK_FILES = Object.entries(QUICK).flatMap(([folder, names]) =>
  names.map((name) => `${folder}/${name}`),
);

const shared = {
  // Node's, naming any test file that leaves something running
  // (test/helpers/suite/leak-environment.cjs).
  testEnvironment: '<rootDir>/test/helpers/suite/leak-environment.cjs',
  roots: ['<rootDir>/test'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  globalSetup: '<rootDir>/test/helpers/suite/global-setup.ts',
  globalTeardown: '<rootDir>/test/helpers/suite/global-teardown.ts',
};

// eslint-disable-next-line no-undef -- CommonJS config file
module.exports = {
  // A bound on a hang, not on speed: on a loaded machine (the suite beside CPU-bound work) a
  // test that starts several processes one after another (a CLI per step) takes several times
  // its quiet time. The tests' own waits have shorter bounds that name what they wait for.
  testTimeout: 90000,
  // Most tests wait on Redis, brokers, child processes and timers rather than compute: three
  // workers on 2 cores finish the whole suite in about 60 % of one worker's time. Ports are
  // each worker's own (harness/private-redis.ts freePort), dist/ is built once by the
  // global setup, and every test keeps to its own queue prefix or a private server.
  // (A number: given '150%' here, this Jest started far more than three workers.)
  maxWorkers: Math.max(1, Math.round(availableParallelism() * 1.5)),
  projects: [
    {
      ...shared,
      displayName: 'quick',
      testMatch: QUICK_FILES.map((name) => `<rootDir>/test/${name}.test.ts`),
    },
    {
      ...shared,
      displayName: 'rest',
      testMatch: ['**/*.test.ts'],
      testPathIgnorePatterns: [
        '/node_modules/',
        ...QUICK_FILES.map((name) => `/test/${name}\\.test\\.ts$`),
      ],
    },
  ],
};
