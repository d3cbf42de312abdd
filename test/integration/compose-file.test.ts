import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { parse } from 'yaml';
import { afterTest } from '../helpers/after-test';
import { freePort } from '../../harness/private-redis';
import { spawnService } from '../helpers/spawn-service';

const run = promisify(execFile);
const root = join(__dirname, '..', '..');
const SECRET = `whsec_${'k'.repeat(32)}`;

/** What `podman-compose up` would run, without an engine (.ci/run installs podman-compose). */
function dryRun(env: Record<string, string>) {
  const { status, stdout, stderr } = spawnSync(
    'podman-compose',
    // A project name of its own: by default it is the checkout folder's, which may be anything.
    ['--dry-run', '--podman-path', '/bin/true', '-p', 'aw', 'up', '--no-build'],
    { cwd: root, env: { PATH: process.env.PATH ?? '', ...env }, encoding: 'utf8' },
  );
  return { status, output: stdout + stderr };
}

/** Each service's `create` command line, by service name. */
function containers(output: string): Map<string, string> {
  return new Map(
    [...output.matchAll(/ create --name=aw_([\w-]+)_1 (.*)$/gm)].map(([, name = '', line = '']) => [
      name,
      line,
    ]),
  );
}

it('docker-compose.yml has no ${VAR:-} with an empty default', () => {
  const text = readFileSync(join(root, 'docker-compose.yml'), 'utf8');
  expect(text).not.toMatch(/\$\{\w+:-\}/);
});

it('podman-compose 1.0.3 (Debian 12) passes every variable through, none literally', async () => {
  // --dry-run prints the podman commands without an engine; .ci/run installs podman-compose.
  const { stdout, stderr } = await run(
    'podman-compose',
    // A project name of its own: by default it is the checkout folder's, which may be anything.
    ['--dry-run', '--podman-path', '/bin/true', '-p', 'aw', 'up', '--no-build'],
    { cwd: root, env: { PATH: process.env.PATH ?? '', WEBHOOK_SECRETS: 'whsec_real' } },
  );
  const output = stdout + stderr;
  const envArgs = [...output.matchAll(/-e (\S+)/g)].map((match) => match[1]);
  expect(envArgs).toEqual(expect.arrayContaining(['WEBHOOK_SECRETS=whsec_real', 'CDN_URL']));
  expect(envArgs.filter((arg) => arg?.includes('${'))).toEqual([]);
});

it('4. holds no signing secret: without WEBHOOK_SECRETS nothing is created, and the refusal names the variable', () => {
  // `:?` with no default: Docker Compose refuses an unset or empty variable before creating
  // anything. podman-compose 1.0.3 refuses an unset one (an empty one it passes on, and the
  // service then refuses to start: an empty variable counts as unset, and WEBHOOK_SECRETS is
  // required).
  const compose = parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8'), {
    merge: true,
  }) as { services: Record<string, { environment?: Record<string, unknown> }> };
  for (const [name, service] of Object.entries(compose.services)) {
    const value = service.environment?.WEBHOOK_SECRETS;
    if (value !== undefined)
      expect({ name, value }).toEqual({
        name,
        value: expect.stringMatching(/^\$\{WEBHOOK_SECRETS:\?[^}]+\}$/),
      });
  }
  const refused = dryRun({});
  expect(refused.status).not.toBe(0);
  expect(refused.output).toMatch(/WEBHOOK_SECRETS/);
  expect(containers(refused.output)).toEqual(new Map());
  // With one, every service gets it as given.
  const { status, output } = dryRun({ WEBHOOK_SECRETS: SECRET });
  expect(status).toBe(0);
  for (const [name, line] of containers(output)) {
    if (name !== 'redis')
      expect({ name, line }).toMatchObject({
        line: expect.stringContaining(`-e WEBHOOK_SECRETS=${SECRET} `),
      });
  }
});

it('5. memory limits on every container; the service containers read-only, /tmp a bounded tmpfs', () => {
  const { output } = dryRun({ WEBHOOK_SECRETS: SECRET });
  const created = containers(output);
  expect([...created.keys()]).toEqual(expect.arrayContaining(['redis', 'receiver', 'worker']));
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
  }
});

it('the receiver mounts the audio volume read-only: its inspector reads the archive there', () => {
  const { output } = dryRun({ WEBHOOK_SECRETS: SECRET });
  const created = containers(output);
  expect(` ${created.get('receiver') ?? ''} `).toMatch(/ -v \S+:\/app\/data\/audio:ro /);
  expect(` ${created.get('worker') ?? ''} `).toMatch(/ -v \S+:\/app\/data\/audio /);
});

it("5. Redis as compose runs it: a maxmemory (docs/capacity.md's sizing) under the container's limit, noeviction, append-only", async () => {
  const { output } = dryRun({ WEBHOOK_SECRETS: SECRET });
  const line = containers(output).get('redis') ?? '';
  // The command after the image, as compose resolved it: a real redis-server runs it here, on
  // loopback and a free port, with a data folder of its own.
  const args = /redis:[\w.-]+ redis-server (.*)$/.exec(line)?.[1]?.split(' ') ?? [];
  expect(args).not.toEqual([]);
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'aw-compose-redis-'));
  const server = spawnService(
    {},
    {
      command: [
        'redis-server',
        ...args,
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
      ],
    },
  );
  await server.waitForLog(/Ready to accept connections/);
  const redis = new Redis({ port, host: '127.0.0.1', lazyConnect: true });
  afterTest(() => redis.quit());
  await redis.connect();
  const setting = async (name: string) => (await redis.config('GET', name))[1];
  const maxmemory = Number(await setting('maxmemory'));
  expect(await setting('maxmemory-policy')).toBe('noeviction');
  expect(await setting('appendonly')).toBe('yes');
  expect(await setting('appendfsync')).toBe('everysec');
  // docs/capacity.md at 10 deliveries a second: twice what stays behind is about 1.2 GB.
  expect(maxmemory).toBeGreaterThanOrEqual(1_000_000_000);
  // The container needs more than maxmemory: Redis's own overhead, and the copy-on-write pages of
  // the fork that rewrites the append-only file.
  const limit = /(?:-m|--memory) (\d+)([mg])/.exec(line);
  const limitBytes = Number(limit?.[1]) * (limit?.[2] === 'g' ? 1024 ** 3 : 1024 ** 2);
  expect(maxmemory).toBeLessThanOrEqual(limitBytes * 0.75);
});
