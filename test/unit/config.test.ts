import { ConfigError, loadConfig, SENDER_RETRY_WINDOW_SECONDS } from '../../src/config/config';
import { cpusInQuota } from '../../src/config/cpu-quota';

function problems(env: Record<string, string>): readonly string[] {
  try {
    loadConfig(env);
  } catch (error: unknown) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    expect(loadConfig({ WEBHOOK_SECRETS: 's1' })).toEqual({
      webhookSecrets: ['s1'],
      port: 3000,
      host: '0.0.0.0',
      webhookPath: '/webhooks',
      signatureToleranceSeconds: 300,
      maxBodyBytes: 1_048_576,
      redisUrl: 'redis://127.0.0.1:6379',
      redisSentinels: [],
      redisSentinelName: 'mymaster',
      redisClusterNodes: [],
      redisWaitReplicas: 0,
      redisWaitTimeoutMs: 500,
      queuePrefix: 'audio-webhooks',
      dedupeTtlSeconds: 259_200,
      role: 'all',
      audioDir: './data/audio',
      audioStore: 'local',
      s3Prefix: '',
      s3Region: 'us-east-1',
      s3ForcePathStyle: false,
      cdnOrigins: [],
      downloadAllowPrivateIps: false,
      downloadCaFile: undefined,
      downloadMaxBytes: 104_857_600,
      downloadTimeoutMs: 60_000,
      downloadAttempts: 8,
      downloadBackoffMs: 2_000,
      forwardDestinations: [],
      forwardConfigDestinations: [],
      forwardSecret: undefined,
      forwardAttempts: 10,
      forwardBackoffMs: 5_000,
      forwardTimeoutMs: 10_000,
      forwardConcurrency: 32,
      forwardPauseAfter: 20,
      forwardProbeSeconds: 30,
      forwardHoldSeconds: 86_400,
      workerConcurrency: 8,
      workerLockMs: 30_000,
      shutdownTimeoutMs: 25_000,
      logLevel: 'info',
      logFormat: 'auto',
      trustProxy: 'loopback',
      adminPassword: undefined,
      adminReadOnly: true,
      workerHealthPort: undefined,
      workerStallMs: 300_000,
      otelEndpoint: undefined,
      webConcurrency: cpusInQuota(),
      archiveRetentionHours: 168,
    });
  });

  it('WEB_CONCURRENCY: auto is the CPUs in the quota; a number is taken as is; anything else is refused', () => {
    expect(loadConfig({ WEBHOOK_SECRETS: 's', WEB_CONCURRENCY: '3' }).webConcurrency).toBe(3);
    expect(() => loadConfig({ WEBHOOK_SECRETS: 's', WEB_CONCURRENCY: 'many' })).toThrow(
      'WEB_CONCURRENCY must be auto or a whole number from 1 to 256',
    );
    expect(() => loadConfig({ WEBHOOK_SECRETS: 's', WEB_CONCURRENCY: '0' })).toThrow(
      'WEB_CONCURRENCY must be auto or a whole number from 1 to 256',
    );
  });

  it('any ADMIN_PASSWORD serves the dashboard (a short one is warned of); the stall limit must outlast a download', () => {
    expect(loadConfig({ WEBHOOK_SECRETS: 's', ADMIN_PASSWORD: 'hunter2' }).adminPassword).toBe(
      'hunter2',
    );
    expect(() =>
      loadConfig({ WEBHOOK_SECRETS: 's', WORKER_STALL_MS: '60000', DOWNLOAD_TIMEOUT_MS: '60000' }),
    ).toThrow('WORKER_STALL_MS (60000) must exceed DOWNLOAD_TIMEOUT_MS (60000)');
    expect(() =>
      loadConfig({ WEBHOOK_SECRETS: 's', OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }),
    ).toThrow('OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL');
  });

  it('AUDIO_STORE=s3: S3_BUCKET required, the endpoint an http(s) URL, the prefix empty unless set', () => {
    expect(() => loadConfig({ WEBHOOK_SECRETS: 's', AUDIO_STORE: 's3' })).toThrow(
      'S3_BUCKET is required with AUDIO_STORE=s3',
    );
    expect(() => loadConfig({ WEBHOOK_SECRETS: 's', AUDIO_STORE: 'gcs' })).toThrow(
      'AUDIO_STORE must be local or s3',
    );
    expect(() =>
      loadConfig({
        WEBHOOK_SECRETS: 's',
        AUDIO_STORE: 's3',
        S3_BUCKET: 'b',
        S3_ENDPOINT: 'ceph:7480',
      }),
    ).toThrow('S3_ENDPOINT must be an http:// or https:// URL');
    expect(
      loadConfig({
        WEBHOOK_SECRETS: 's',
        AUDIO_STORE: 's3',
        S3_BUCKET: 'b',
        S3_FORCE_PATH_STYLE: 'true',
      }),
    ).toMatchObject({
      audioStore: 's3',
      s3Bucket: 'b',
      s3Prefix: '',
      s3Region: 'us-east-1',
      s3ForcePathStyle: true,
    });
  });

  it('reads Sentinels and Cluster nodes as host:port lists', () => {
    const config = loadConfig({
      WEBHOOK_SECRETS: 's',
      REDIS_SENTINELS: '127.0.0.1:26379, sentinel-b:26380,[::1]:26381',
    });
    expect(config.redisSentinels).toEqual([
      { host: '127.0.0.1', port: 26379 },
      { host: 'sentinel-b', port: 26380 },
      { host: '::1', port: 26381 },
    ]);
    expect(problems({ WEBHOOK_SECRETS: 's', REDIS_CLUSTER_NODES: 'a:1,b' })).toEqual([
      'REDIS_CLUSTER_NODES "b" is not host:port',
    ]);
  });

  it('refuses a Cluster without a {hash tag} in QUEUE_PREFIX, naming QUEUE_PREFIX', () => {
    const cluster = { WEBHOOK_SECRETS: 's', REDIS_CLUSTER_NODES: '127.0.0.1:7000' };
    expect(problems(cluster)).toEqual([
      expect.stringMatching(/^QUEUE_PREFIX must hold a \{hash tag\} such as \{audio-webhooks\}/),
    ]);
    expect(loadConfig({ ...cluster, QUEUE_PREFIX: '{aw}' }).redisClusterNodes).toHaveLength(1);
    expect(problems({ ...cluster, QUEUE_PREFIX: '{aw}', REDIS_SENTINELS: 'x:1' })).toEqual([
      'REDIS_SENTINELS and REDIS_CLUSTER_NODES exclude each other: set one',
    ]);
    expect(problems({ ...cluster, QUEUE_PREFIX: '{aw}', REDIS_WAIT_REPLICAS: '1' })).toEqual([
      expect.stringMatching(/^REDIS_WAIT_REPLICAS is not supported with REDIS_CLUSTER_NODES/),
    ]);
  });

  it('returns a frozen object', () => {
    expect(Object.isFrozen(loadConfig({ WEBHOOK_SECRETS: 's1' }))).toBe(true);
  });

  it('splits secrets and CDN origins, normalising origins', () => {
    const config = loadConfig({
      WEBHOOK_SECRETS: 'new, old',
      CDN_URL: 'https://CDN.example.com:443, https://127.0.0.1:8443/',
      TRUST_PROXY: '2',
    });
    expect(config.webhookSecrets).toEqual(['new', 'old']);
    expect(config.cdnOrigins).toEqual(['https://cdn.example.com', 'https://127.0.0.1:8443']);
    expect(config.trustProxy).toBe(2);
  });

  it('reports every bad variable at once', () => {
    expect(
      problems({
        PORT: '70000',
        SIGNATURE_TOLERANCE_SECONDS: '5m',
        ROLE: 'both',
        CDN_URL: 'http://cdn.example.com',
        DOWNLOAD_ALLOW_PRIVATE_IPS: 'yes',
        REDIS_URL: 'localhost:6379',
        TRUST_PROXY: '300.1.1.1',
      }),
    ).toEqual([
      'WEBHOOK_SECRETS is required',
      expect.stringMatching(/^PORT must be between 0 and 65535/),
      expect.stringMatching(/^SIGNATURE_TOLERANCE_SECONDS must be a whole number/),
      expect.stringMatching(/^REDIS_URL must start with redis:\/\//),
      expect.stringMatching(/^ROLE /),
      expect.stringMatching(/^CDN_URL "http:\/\/cdn.example.com" is not an origin/),
      expect.stringMatching(/^DOWNLOAD_ALLOW_PRIVATE_IPS /),
      expect.stringMatching(/^TRUST_PROXY "300.1.1.1" is not valid/),
    ]);
  });

  it('refuses an empty secret in the list', () => {
    expect(problems({ WEBHOOK_SECRETS: 'a,,b' })).toEqual([
      'WEBHOOK_SECRETS must not contain an empty secret',
    ]);
  });

  it('refuses a dedupe window shorter than the sender retry window', () => {
    expect(
      problems({ WEBHOOK_SECRETS: 's', DEDUPE_TTL_SECONDS: String(SENDER_RETRY_WINDOW_SECONDS) }),
    ).toEqual([
      "DEDUPE_TTL_SECONDS must exceed the sender's retry window of 30930 s (8 h 35 min 30 s)",
    ]);
    expect(loadConfig({ WEBHOOK_SECRETS: 's', DEDUPE_TTL_SECONDS: '30931' }).dedupeTtlSeconds).toBe(
      30931,
    );
  });

  it('treats an empty variable as unset', () => {
    expect(loadConfig({ WEBHOOK_SECRETS: 's', PORT: '' }).port).toBe(3000);
  });
});

describe('the message of a refused configuration', () => {
  // One form for one problem and for several: the same lower-case start, the variable first.
  function message(env: Record<string, string>): string {
    try {
      loadConfig(env);
    } catch (error: unknown) {
      if (error instanceof ConfigError) return error.message;
      throw error;
    }
    throw new Error('expected a ConfigError');
  }

  it('one problem: one line, "invalid configuration: <VAR> <problem>"', () => {
    expect(message({ WEBHOOK_SECRETS: 'a,,b' })).toBe(
      'invalid configuration: WEBHOOK_SECRETS must not contain an empty secret',
    );
  });

  it('several: "invalid configuration:", then one line per problem, each naming its variable', () => {
    const text = message({ WEBHOOK_SECRETS: 'a,,b', ROLE: 'everything' });
    const [first, ...rest] = text.split('\n');
    expect(first).toBe('invalid configuration:');
    expect(rest).toEqual([
      '  - WEBHOOK_SECRETS must not contain an empty secret',
      expect.stringMatching(/^ {2}- ROLE /),
    ]);
  });
});
