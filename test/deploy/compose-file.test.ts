import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { parse } from 'yaml';
import { afterTest } from '../helpers/after-test';
import { freePort } from '../../harness/private-redis';
import { spawnService } from '../helpers/spawn-service';
import { SETTINGS } from '../../src/settings';

// docker-compose.yml and docker-compose.sandbox.yml as podman-compose 1.0.3 (Debian 12) reads
// them: --dry-run prints the podman commands without an engine (.ci/run installs podman-compose).
// That version has no `config` command: a dry run of `up` or `down` loads, merges and resolves
// the files as far as any command does.

const root = join(__dirname, '..', '..');
const BASE = 'docker-compose.yml';
const SANDBOX = 'docker-compose.sandbox.yml';
const SECRET = `whsec_${'k'.repeat(32)}`;
const PASSWORD = 'redis-password-0123456789';

/** What `podman-compose -f … <command>` would run. */
function dryRun(files: readonly string[], command: readonly string[], env = {}) {
  const { status, stdout, stderr } = spawnSync(
    'podman-compose',
    // A project name of its own: by default it is the checkout folder's, which may be anything.
    [
      '--dry-run',
      '--podman-path',
      '/bin/true',
      '-p',
      'aw',
      ...files.flatMap((f) => ['-f', f]),
    ].concat(command),
    { cwd: root, env: { PATH: process.env.PATH ?? '', ...env }, encoding: 'utf8' },
  );
  return { status, output: stdout + stderr };
}
const up = (files: readonly string[], env = {}) => dryRun(files, ['up', '--no-build'], env);

/** Each service's `create` command line, by service name. */
function containers(output: string): Map<string, string> {
  return new Map(
    [...output.matchAll(/ create --name=aw_([\w-]+)_1 (.*)$/gm)].map(([, name = '', line = '']) => [
      name,
      line,
    ]),
  );
}

interface Service {
  environment?: Record<string, unknown>;
  command?: string[];
  ports?: string[];
  healthcheck?: { test: string[] };
}
const compose = (file: string) =>
  parse(readFileSync(join(root, file), 'utf8'), { merge: true }) as {
    services: Record<string, Service>;
  };

it('15. both files load in podman-compose 1.0.3, up and down, with or without the secrets set; the base names no sandbox service', () => {
  for (const files of [[BASE], [SANDBOX], [BASE, SANDBOX]]) {
    for (const env of [{}, { WEBHOOK_SECRETS: SECRET, REDIS_PASSWORD: PASSWORD }]) {
      const started = up(files, env);
      expect({
        files,
        env,
        status: started.status,
        traceback: started.output.includes('Traceback'),
      }).toEqual({ files, env, status: 0, traceback: false });
      // `down` with nothing set: it names no secret, so it must not need one.
      const down = dryRun(files, ['down'], env);
      expect({ files, env, status: down.status, output: down.output }).toMatchObject({
        status: 0,
        output: expect.stringMatching(/ rm aw_/),
      });
    }
  }
  const text = readFileSync(join(root, BASE), 'utf8');
  expect(Object.keys(compose(BASE).services).sort()).toEqual(['receiver', 'redis', 'worker']);
  expect(text).not.toMatch(/profiles:/);
  expect([...containers(up([BASE]).output).keys()].sort()).toEqual(['receiver', 'redis', 'worker']);
  expect([...containers(up([BASE, SANDBOX]).output).keys()].sort()).toEqual(
    ['receiver', 'redis', 'sandbox', 'sandbox-receiver', 'sandbox-worker', 'worker'].sort(),
  );
});

it('no ${VAR:-} with an empty default (podman-compose 1.0.3 passes it on literally), and every variable reaches the services resolved', () => {
  for (const file of [BASE, SANDBOX])
    expect(readFileSync(join(root, file), 'utf8')).not.toMatch(/\$\{\w+:-\}/);
  const { output } = up([BASE, SANDBOX], { WEBHOOK_SECRETS: SECRET, CDN_URL: 'https://cdn.x' });
  const envArgs = [...output.matchAll(/-e (\S+)/g)].map((match) => match[1]);
  expect(envArgs).toEqual(expect.arrayContaining([`WEBHOOK_SECRETS=${SECRET}`, 'CDN_URL']));
  expect(envArgs.filter((arg) => arg?.includes('$'))).toEqual([]);
});

it('15. with no WEBHOOK_SECRETS, compose passes it empty and each service refuses to start, naming it', () => {
  const created = containers(up([BASE, SANDBOX]).output);
  expect(created.size).toBe(6);
  for (const [name, line] of created) {
    if (name === 'redis') continue;
    // The service's own variables, as podman would give them (`-e NAME` passes the shell's: unset).
    const env = Object.fromEntries(
      [...line.matchAll(/ -e (\w+)=(\S*)/g)].map(([, key = '', value = '']) => [key, value]),
    );
    expect({ name, secrets: env.WEBHOOK_SECRETS }).toEqual({ name, secrets: '' });
    const { status, stdout, stderr } = spawnSync(
      process.execPath,
      [join(root, 'dist', 'main.js')],
      {
        env: {
          PATH: process.env.PATH ?? '',
          ...env,
          AUDIO_DIR: mkdtempSync(join(tmpdir(), 'aw-')),
        },
        encoding: 'utf8',
        timeout: 30_000,
      },
    );
    expect({ name, status }).toEqual({ name, status: 1 });
    expect(stdout + stderr).toMatch(/WEBHOOK_SECRETS/);
  }
});

it('15. the sandbox publishes its ports on loopback only, moved by SANDBOX_API_PORT and SANDBOX_CDN_PORT', () => {
  const published = (env = {}) =>
    [...up([BASE, SANDBOX], env).output.matchAll(/ create --name=aw_sandbox_1 .*$/gm)]
      .flatMap(([line]) => [...line.matchAll(/ -p (\S+)/g)].map((m) => m[1]))
      .sort();
  expect(published()).toEqual(['127.0.0.1:4010:4010', '127.0.0.1:4443:4443']);
  expect(published({ SANDBOX_API_PORT: '5010', SANDBOX_CDN_PORT: '5443' })).toEqual([
    '127.0.0.1:5010:4010',
    '127.0.0.1:5443:4443',
  ]);
  for (const [name, service] of Object.entries(compose(SANDBOX).services))
    for (const port of service.ports ?? [])
      expect({ name, port }).toEqual({
        name,
        port: expect.stringMatching(/^127\.0\.0\.1:\$\{\w+:-\d+\}:\d+$/),
      });
});

it('15. the drain fits the tool: podman-compose ignores stop_grace_period, and the documented `down -t` outlasts SHUTDOWN_TIMEOUT_MS', () => {
  const text = readFileSync(join(root, BASE), 'utf8');
  const drainSeconds = Number(SETTINGS.SHUTDOWN_TIMEOUT_MS.default) / 1000;
  const grace = /stop_grace_period: (\d+)s/.exec(text)?.[1];
  expect(Number(grace)).toBeGreaterThan(drainSeconds);
  // Its own default is shorter than the drain: the reason the flag is documented.
  expect(dryRun([BASE], ['down']).output).toMatch(/ stop -t 10 aw_worker_1/);
  const documented = /`podman-compose down -t (\d+)`/.exec(text)?.[1];
  expect(Number(documented)).toBeGreaterThan(drainSeconds);
  const { output } = dryRun([BASE, SANDBOX], ['down', '-t', String(documented)]);
  const stops = [...output.matchAll(/ stop -t (\d+) aw_([\w-]+)_1/g)].map(([, t, name]) => [
    name,
    t,
  ]);
  expect(stops).toHaveLength(6);
  for (const [name, t] of stops) expect({ name, t }).toEqual({ name, t: documented });
});

it('5. memory limits on every container; the service containers read-only, /tmp a bounded tmpfs; one image built for all', () => {
  const created = containers(up([BASE, SANDBOX], { WEBHOOK_SECRETS: SECRET }).output);
  expect(created.size).toBe(6);
  for (const [name, line] of created) {
    expect({ name, memory: /(?:-m|--memory) (\S+)/.exec(line)?.[1] }).toEqual({
      name,
      memory: expect.stringMatching(/^\d+[mg]$/),
    });
    expect({ name, readOnly: ` ${line} `.includes(' --read-only ') }).toEqual({
      name,
      readOnly: true,
    });
    expect({ name, tmp: /--tmpfs \/tmp:\S*size=\d+[mk]/.test(line) }).toEqual({ name, tmp: true });
    if (name !== 'redis')
      expect({ name, image: / audio-webhooks:local( |$)/.test(line) }).toEqual({
        name,
        image: true,
      });
  }
});

it('the receiver mounts the audio volume read-only: its inspector reads the archive there', () => {
  const created = containers(up([BASE], { WEBHOOK_SECRETS: SECRET }).output);
  expect(` ${created.get('receiver') ?? ''} `).toMatch(/ -v \S+:\/app\/data\/audio:ro /);
  expect(` ${created.get('worker') ?? ''} `).toMatch(/ -v \S+:\/app\/data\/audio /);
});

it('13. the Redis image is pinned by digest, with how to update it', () => {
  const text = readFileSync(join(root, BASE), 'utf8');
  expect(text).toMatch(/^ {4}image: redis:7-alpine@sha256:[0-9a-f]{64}$/m);
  expect(text).toMatch(/To\s+# update: `docker buildx imagetools inspect redis:7-alpine`/);
});

it('15. Redis runs only with REDIS_PASSWORD, which every service gets; 5. a maxmemory (docs/capacity.md) under its limit, noeviction, append-only', async () => {
  const redisService = compose(BASE).services.redis;
  // The command as the container runs it: compose's `$$` is a `$`. A real redis-server runs it
  // here, on loopback and a free port, with a data folder of its own.
  const [shell = '', flag = '', script = '', ...args] = (redisService?.command ?? []).map((part) =>
    part.replaceAll('$$', '$'),
  );
  expect([shell, flag]).toEqual(['sh', '-c']);
  const run = (env: Record<string, string>, port: number) =>
    spawnService(env, {
      command: [
        shell,
        flag,
        script,
        ...args,
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        mkdtempSync(join(tmpdir(), 'aw-compose-redis-')),
      ],
    });
  const refused = run({}, await freePort());
  expect(await refused.exited).toBe(1);
  expect(refused.stderr()).toMatch(/REDIS_PASSWORD/);

  const port = await freePort();
  const server = run({ REDIS_PASSWORD: PASSWORD }, port);
  await server.waitForLog(/Ready to accept connections/);
  // Without the password Redis answers nothing but NOAUTH.
  const anonymous = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), 'ping'], {
    encoding: 'utf8',
    timeout: 10_000,
  });
  expect(anonymous.stdout + anonymous.stderr).toMatch(/NOAUTH/);
  const redis = new Redis({ port, host: '127.0.0.1', password: PASSWORD, lazyConnect: true });
  afterTest(() => redis.quit());
  await redis.connect();
  const setting = async (name: string) => (await redis.config('GET', name))[1];
  const maxmemory = Number(await setting('maxmemory'));
  expect(await setting('maxmemory-policy')).toBe('noeviction');
  expect(await setting('appendonly')).toBe('yes');
  expect(await setting('appendfsync')).toBe('everysec');
  // docs/capacity.md at 10 deliveries a second: twice what stays behind is about 1.2 GB.
  expect(maxmemory).toBeGreaterThanOrEqual(1_000_000_000);
  const line = containers(up([BASE]).output).get('redis') ?? '';
  // The container needs more than maxmemory: Redis's own overhead, and the copy-on-write pages of
  // the fork that rewrites the append-only file.
  const limit = /(?:-m|--memory) (\d+)([mg])/.exec(line);
  const limitBytes = Number(limit?.[1]) * (limit?.[2] === 'g' ? 1024 ** 3 : 1024 ** 2);
  expect(maxmemory).toBeLessThanOrEqual(limitBytes * 0.75);
  // The health check authenticates with the same variable.
  expect(redisService?.healthcheck?.test.join(' ')).toContain('REDISCLI_AUTH="$$REDIS_PASSWORD"');

  // Every service of both files gets the password, as set, beside REDIS_URL.
  const created = containers(up([BASE, SANDBOX], { REDIS_PASSWORD: PASSWORD }).output);
  for (const [name, created_] of created)
    expect({ name, password: created_.includes(` -e REDIS_PASSWORD=${PASSWORD} `) }).toEqual({
      name,
      password: true,
    });
});
