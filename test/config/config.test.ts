import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { loadConfig, SENDER_RETRY_WINDOW_SECONDS } from '../../src/settings';
import { cpusInQuota } from '../../src/util/cpu-quota';
import { connectionsFromLimit, openFileLimit } from '../../src/util/open-file-limit';
import { PLACEHOLDER_SECRETS } from '../../src/config/receiver-settings';
import { problems, refusal } from '../helpers/config-problems';

const root = join(__dirname, '..', '..');

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    expect(loadConfig({ WEBHOOK_SECRETS: 's1' })).toEqual({
      webhookSecrets: ['s1'],
      port: 3000,
      host: '127.0.0.1',
      webhookPath: '/webhooks',
      signatureToleranceSeconds: 300,
      maxBodyBytes: 1_048_576,
      maxConnections: connectionsFromLimit(openFileLimit(), 1_000_000),
      redisUrl: 'redis://127.0.0.1:6379',
      redisSentinels: [],
      redisSentinelName: 'mymaster',
      redisClusterNodes: [],
      redisWaitReplicas: 0,
      redisWaitTimeoutMs: 500,
      queuePrefix: 'audio-webhooks',
      queueShards: 1,
      dedupeTtlSeconds: 259_200,
      redisMemoryReservePercent: 10,
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
      forwardSigningKeys: [],
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
      adminHosts: [],
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

  it('ADMIN_PASSWORD off loopback: 16 characters at least, else one line naming it and not the password', () => {
    const open = { WEBHOOK_SECRETS: 'k'.repeat(24), HOST: '0.0.0.0' };
    for (const password of ['Zq9', 'fifteen-chars!!']) {
      const refused = problems({ ...open, ADMIN_PASSWORD: password });
      expect(refused).toEqual([
        expect.stringMatching(
          /^ADMIN_PASSWORD is shorter than 16 characters: refused because HOST 0\.0\.0\.0 is not loopback/,
        ),
      ]);
      expect(refused.join('')).not.toContain(password);
    }
    expect(loadConfig({ ...open, ADMIN_PASSWORD: 'sixteen-chars!!!' }).adminPassword).toBe(
      'sixteen-chars!!!',
    );
    // A worker serves no dashboard; the CLI listens nowhere.
    expect(loadConfig({ ...open, ADMIN_PASSWORD: 'a', ROLE: 'worker' }).adminPassword).toBe('a');
    expect(loadConfig({ ...open, ADMIN_PASSWORD: 'a' }, { forCli: true }).adminPassword).toBe('a');
  });

  it('ADMIN_PASSWORD behind a proxy (TRUST_PROXY other than loopback) needs INTERNAL_PORT, named in one line', () => {
    for (const trust of ['true', 'false', '1', '10.0.0.0/8']) {
      expect(problems({ WEBHOOK_SECRETS: 's', ADMIN_PASSWORD: 'p', TRUST_PROXY: trust })).toEqual([
        expect.stringMatching(
          new RegExp(
            `^INTERNAL_PORT is required with ADMIN_PASSWORD and TRUST_PROXY=${trust.replace(/[./]/g, '\\$&')}:`,
          ),
        ),
      ]);
      const split = { WEBHOOK_SECRETS: 's', ADMIN_PASSWORD: 'p', TRUST_PROXY: trust };
      expect(loadConfig({ ...split, INTERNAL_PORT: '9464' }).internalPort).toBe(9464);
    }
    // No dashboard: nothing to protect.
    expect(loadConfig({ WEBHOOK_SECRETS: 's', TRUST_PROXY: 'true' }).trustProxy).toBe(true);
  });

  it('ADMIN_HOSTS: host names, lower-cased, without a port or a scheme', () => {
    expect(
      loadConfig({ WEBHOOK_SECRETS: 's', ADMIN_HOSTS: 'Admin.Example.com, board.internal.' })
        .adminHosts,
    ).toEqual(['admin.example.com', 'board.internal']);
    for (const bad of ['admin.example.com:9464', 'https://admin.example.com', 'a b'])
      expect(problems({ WEBHOOK_SECRETS: 's', ADMIN_HOSTS: `ok.example,${bad}` })).toEqual([
        expect.stringMatching(/^ADMIN_HOSTS ".*" is not a host name/),
      ]);
  });

  it('any ADMIN_PASSWORD serves the dashboard on loopback (a short one is warned of); the stall limit must outlast a download', () => {
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
    // WAIT goes to the primary that holds a delivery's slot (redis/replica-wait.ts).
    expect(
      loadConfig({ ...cluster, QUEUE_PREFIX: '{aw}', REDIS_WAIT_REPLICAS: '1' }).redisWaitReplicas,
    ).toBe(1);
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

  it('refuses a dedupe window that does not outlast the retry window plus the signature tolerance, naming both', () => {
    expect(problems({ WEBHOOK_SECRETS: 's', DEDUPE_TTL_SECONDS: '30931' })).toEqual([
      "DEDUPE_TTL_SECONDS (30931) must exceed the sender's retry window (30930 s) plus SIGNATURE_TOLERANCE_SECONDS (300), 31230 s: a retry is accepted that long after the first attempt, and must be found a duplicate",
    ]);
    const longTolerance = { WEBHOOK_SECRETS: 's', SIGNATURE_TOLERANCE_SECONDS: '86400' };
    expect(problems({ ...longTolerance, DEDUPE_TTL_SECONDS: '117330' })).toEqual([
      expect.stringMatching(
        /^DEDUPE_TTL_SECONDS \(117330\) must exceed .* plus SIGNATURE_TOLERANCE_SECONDS \(86400\)/,
      ),
    ]);
    expect(loadConfig({ ...longTolerance, DEDUPE_TTL_SECONDS: '117331' }).dedupeTtlSeconds).toBe(
      117_331,
    );
    const floor = SENDER_RETRY_WINDOW_SECONDS + 300;
    expect(
      loadConfig({ WEBHOOK_SECRETS: 's', DEDUPE_TTL_SECONDS: String(floor + 1) }).dedupeTtlSeconds,
    ).toBe(floor + 1);
    // The default holds with the largest tolerance allowed.
    expect(loadConfig(longTolerance).dedupeTtlSeconds).toBe(259_200);
  });

  it('treats an empty variable as unset', () => {
    expect(loadConfig({ WEBHOOK_SECRETS: 's', PORT: '' }).port).toBe(3000);
  });
});

describe('HOST and the signing secrets', () => {
  const LONG = 'whsec_' + 'k'.repeat(24);

  it('listens on loopback unless told otherwise, where any secret will do', () => {
    expect(loadConfig({ WEBHOOK_SECRETS: 'whsec_replace_me' }).host).toBe('127.0.0.1');
    for (const host of ['127.0.0.1', '127.8.9.10', '::1', '[::1]', 'localhost', '::ffff:127.0.0.1'])
      expect(loadConfig({ WEBHOOK_SECRETS: 's', HOST: host }).host).toBe(host);
  });

  it('the Dockerfile, compose (receiver and worker) and deploy/kubernetes open HOST to every interface', () => {
    const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^ENV .*\bHOST=0\.0\.0\.0\b/m);
    const compose = parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8'), {
      merge: true,
    }) as { services: Record<string, { environment: Record<string, unknown> }> };
    for (const name of ['receiver', 'worker'])
      expect(compose.services[name]?.environment.HOST).toBe('0.0.0.0');
    const configEnv = readFileSync(join(root, 'deploy', 'kubernetes', 'config.env'), 'utf8');
    expect(configEnv).toMatch(/^HOST=0\.0\.0\.0$/m);
  });

  it('elsewhere, refuses an example secret or a short one in one line naming WEBHOOK_SECRETS, never the secret', () => {
    for (const host of ['0.0.0.0', '::', '10.1.2.3', 'receiver.internal', '127.1']) {
      const refused = problems({ WEBHOOK_SECRETS: 'whsec_replace_me', HOST: host });
      expect(refused).toEqual([
        `WEBHOOK_SECRETS is an example from this repository: refused because HOST ${host} is not loopback, so anyone who reaches it could sign deliveries; set the signing secret from the provider's dashboard, or HOST=127.0.0.1`,
      ]);
    }
    const both = problems({
      WEBHOOK_SECRETS: `${LONG},dev-only-secret-change-me,whsec_tooShort_9f8e7d`,
      HOST: '0.0.0.0',
    });
    expect(both).toEqual([
      expect.stringMatching(
        /^WEBHOOK_SECRETS index 1 is an example from this repository, index 2 is shorter than 24 characters after its whsec_ prefix: refused because HOST 0\.0\.0\.0 is not loopback/,
      ),
    ]);
    expect(both.join('\n')).not.toMatch(/dev-only|tooShort|kkkk/);
    // The prefix is optional and not counted: 24 characters after it, or without it, will do.
    expect(problems({ WEBHOOK_SECRETS: 'whsec_' + 'k'.repeat(23), HOST: '0.0.0.0' })).toEqual([
      expect.stringMatching(/^WEBHOOK_SECRETS is shorter than 24 characters after its whsec_/),
    ]);
    expect(loadConfig({ WEBHOOK_SECRETS: LONG, HOST: '0.0.0.0' }).webhookSecrets).toEqual([LONG]);
    expect(loadConfig({ WEBHOOK_SECRETS: 'k'.repeat(24), HOST: '0.0.0.0' }).host).toBe('0.0.0.0');
    // Every role of the service listens on HOST; the CLI listens nowhere.
    expect(problems({ WEBHOOK_SECRETS: 's', HOST: '0.0.0.0', ROLE: 'worker' })).toHaveLength(1);
    expect(loadConfig({ WEBHOOK_SECRETS: 's', HOST: '0.0.0.0' }, { forCli: true }).host).toBe(
      '0.0.0.0',
    );
  });

  it("the examples refused are every secret this repository's files hold", () => {
    const envExample = readFileSync(join(root, '.env.example'), 'utf8');
    const fromEnvExample = [...envExample.matchAll(/^(?:# )?\w*SECRETS?=(.+)$/gm)].flatMap(
      (match) => (match[1] ?? '').split(','),
    );
    const compose = parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8'), {
      merge: true,
    }) as { 'x-service': { environment: Record<string, string | null> } };
    const fromCompose = Object.entries(compose['x-service'].environment)
      .filter(([name, value]) => /SECRETS?$/.test(name) && value !== null)
      // A fallback (`${VAR:-value}`) is a secret the file holds; `${VAR}` and `${VAR:?why}` hold none.
      .flatMap(([, value]) => {
        if (/^\$\{\w+(?::\?.*)?\}$/.test(value ?? '')) return [];
        return [/^\$\{\w+:-(.+)\}$/.exec(value ?? '')?.[1] ?? value];
      });
    expect(fromEnvExample).toEqual(['whsec_replace_me']);
    // Compose holds none (the services refuse to start without WEBHOOK_SECRETS); the fallback an
    // earlier compose file published is refused still.
    expect(fromCompose).toEqual([]);
    expect([...PLACEHOLDER_SECRETS].sort()).toEqual(
      [...fromEnvExample, 'dev-only-secret-change-me'].sort(),
    );
  });
});

describe('REDIS_URL', () => {
  const PASSWORD = 'hunter2-s3cret';

  it.each([
    [
      'redis://localhost:99999',
      /^REDIS_URL has a port that is not a whole number from 1 to 65535$/,
    ],
    [`redis://:${PASSWORD}@localhost:0`, /^REDIS_URL has a port that is not a whole number/],
    [`redis://:${PASSWORD}@localhost:63x79`, /^REDIS_URL has a port that is not a whole number/],
    [
      `redis://:pa%zz${PASSWORD}@localhost:6379`,
      /^REDIS_URL has a bad %-escape in its user or password/,
    ],
    [
      `redis://u%ZZ:${PASSWORD}@localhost:6379`,
      /^REDIS_URL has a bad %-escape in its user or password/,
    ],
    ['http://x', /^REDIS_URL must start with redis:\/\/ or rediss:\/\//],
    [`redis://:${PASSWORD}@`, /^REDIS_URL names no host$/],
    [
      `redis://:${PASSWORD}@localhost:6379/zero`,
      /^REDIS_URL has a path that is not a database number/,
    ],
    [`redis://:${PASSWORD}@exa mple:6379`, /^REDIS_URL is not a valid URL: check its host/],
    // A / in the password ends the authority early: said so, and nothing of it quoted.
    [
      `redis://:${PASSWORD}/x@localhost:6379`,
      /^REDIS_URL has a \/ \? or # in its user or password/,
    ],
    [
      `redis://:${PASSWORD}#x@localhost:6379`,
      /^REDIS_URL has a \/ \? or # in its user or password/,
    ],
  ])('%s: one problem naming the part at fault, without the password', (url, expected) => {
    const found = problems({ WEBHOOK_SECRETS: 's', REDIS_URL: url });
    expect(found).toEqual([expect.stringMatching(expected)]);
    expect(found[0]).not.toContain(PASSWORD.slice(0, 6));
    expect(found[0]).not.toContain('pa%zz');
  });

  it.each([
    'redis://127.0.0.1:6379',
    'rediss://redis.example.com',
    `redis://:${PASSWORD}@localhost:6379/2`,
    'redis://user:p%40ss%25@[::1]:6380/',
    'redis://localhost:6379?family=6',
  ])('%s is taken as written', (url) => {
    expect(loadConfig({ WEBHOOK_SECRETS: 's', REDIS_URL: url }).redisUrl).toBe(url);
  });
});

describe('the message of a refused configuration', () => {
  // One form for one problem and for several: the same lower-case start, the variable first.
  const message = (env: Record<string, string>) => refusal(env).message;

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

describe('FORWARD_SIGNING_KEY', () => {
  const seed = Buffer.alloc(32, 7).toString('base64');
  const http = { WEBHOOK_SECRETS: 's', FORWARD_URLS: 'https://hooks.example.com/audio' };

  it('takes whsk_ keys of a 32-byte seed, one or several (rotation); an HTTP destination needs it or FORWARD_SECRET', () => {
    const other = Buffer.alloc(32, 9).toString('base64');
    expect(
      loadConfig({ ...http, FORWARD_SIGNING_KEY: `whsk_${seed}, whsk_${other}` })
        .forwardSigningKeys,
    ).toEqual([`whsk_${seed}`, `whsk_${other}`]);
    expect(problems(http)).toEqual([
      expect.stringMatching(
        /^FORWARD_URLS names an HTTP destination .* neither FORWARD_SECRET nor FORWARD_SIGNING_KEY is set/,
      ),
    ]);
  });

  it.each([
    ['another prefix', `whsec_${seed}`],
    ['a seed of 31 bytes', `whsk_${Buffer.alloc(31, 7).toString('base64')}`],
    ['a seed of 64 bytes (a whole private key)', `whsk_${Buffer.alloc(64, 7).toString('base64')}`],
    ['not canonical base64', `whsk_${seed.slice(0, -2)}9=`],
    ['no padding', `whsk_${seed.slice(0, -1)}`],
    ['url-safe base64', `whsk_${Buffer.alloc(32, 0xff).toString('base64url')}`],
    ['an empty entry', `whsk_${seed},`],
  ])('refuses %s in one line naming it, never echoing the value', (_, value) => {
    const refused = problems({ ...http, FORWARD_SIGNING_KEY: value });
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatch(/^FORWARD_SIGNING_KEY must be whsk_/);
    expect(refused[0]).not.toContain(value.slice(5, 20));
  });
});
