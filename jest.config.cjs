/**
 * Jest: ts-jest for TypeScript, one private Redis for the whole run (test/helpers/global-setup).
 * Two projects, which `npm test` runs together: `quick` (`npm run test:quick`, the loop while
 * editing) and `rest`. The quick set is every unit test and the integration tests named here,
 * which need nothing but Redis; any other test file, a new one included, is in `rest`, so it runs
 * in the whole suite until it is listed here. `rest` holds those that need Ceph's gateway,
 * Chromium, Prometheus, kubectl, podman-compose, NATS or RabbitMQ (scripts/test-prerequisites.js
 * provides them), and the slowest Redis-only ones, which would take the quick set past 3 minutes.
 */
// eslint-disable-next-line no-undef, @typescript-eslint/no-require-imports -- CommonJS config file
const { availableParallelism } = require('node:os');

const QUICK_INTEGRATION = [
  'audio-download',
  'concurrency',
  'custom-events',
  'dedupe-mark',
  'delivery-queue-batch',
  'duplicate-race',
  'destination-board',
  'download-release',
  'graceful-shutdown',
  'guarded-agent',
  'local-audio-store',
  'log-format',
  'record-steps',
  'records-and-cli',
  'redis-footprint',
  'redis-full',
  'redis-outage',
  'redis-replicas',
  'replay-confirm',
  'send-custom-event',
  'serve',
  'shared-volume',
  'shutdown-stalls',
  'signature-tolerance',
  'soak-parts',
  'test-redis',
  'tracing',
  'tts-cache-hosts',
  'tts-cache-lease',
  'webhook-route',
  'worker-liveness',
  'worker-metrics',
  'write-batched',
];

const shared = {
  // Node's, naming any test file that leaves something running (test/helpers/leak-environment.cjs).
  testEnvironment: '<rootDir>/test/helpers/leak-environment.cjs',
  roots: ['<rootDir>/test'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  globalSetup: '<rootDir>/test/helpers/global-setup.ts',
  globalTeardown: '<rootDir>/test/helpers/global-teardown.ts',
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
      testMatch: [
        '<rootDir>/test/unit/**/*.test.ts',
        ...QUICK_INTEGRATION.map((name) => `<rootDir>/test/integration/${name}.test.ts`),
      ],
    },
    {
      ...shared,
      displayName: 'rest',
      testMatch: ['**/*.test.ts'],
      testPathIgnorePatterns: [
        '/node_modules/',
        '/test/unit/',
        ...QUICK_INTEGRATION.map((name) => `/test/integration/${name}\\.test\\.ts$`),
      ],
    },
  ],
};
