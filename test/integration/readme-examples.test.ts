import { execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { rmSync } from 'node:fs';
import { Redis } from 'ioredis';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { serve } from '../../src/http/serve';
import { createTestReceiver, deleteKeys, type TestReceiver } from '../helpers/test-receiver';

const run = promisify(execFile);
const root = join(__dirname, '..', '..');
const HTTP_ANSWERS = join('docs', 'http-answers.md');

/**
 * The shell block that follows `<!-- marker… -->` in the README (or another page of the docs),
 * exactly as a reader copies it.
 */
export function readmeBlock(marker: string, file = 'README.md'): string {
  const readme = readFileSync(join(root, file), 'utf8');
  const at = readme.indexOf(`<!-- ${marker}`);
  if (at < 0) throw new Error(`${file} has no <!-- ${marker} --> block`);
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(at));
  if (!block?.[1]) throw new Error(`no sh block after <!-- ${marker} -->`);
  return block[1];
}

let receiver: TestReceiver;
let server: Awaited<ReturnType<typeof serve>>;
beforeAll(async () => {
  receiver = await createTestReceiver({ WEBHOOK_SECRETS: 'whsec_from_the_readme' });
  server = await serve(receiver.listener, 0, '127.0.0.1');
});
afterAll(async () => {
  await server.close();
  await receiver.close();
});

it("the README's openssl + curl signing example is accepted, then recognised as a duplicate", async () => {
  const script = readmeBlock('signing-example', HTTP_ANSWERS);
  const env = {
    PATH: process.env.PATH ?? '',
    SECRET: 'whsec_from_the_readme',
    URL: `http://127.0.0.1:${server.port}/webhooks`,
  };
  const first = await run('bash', ['-euo', 'pipefail', '-c', script], { env });
  expect(first.stdout).toBe('{"received":true,"duplicate":false}');
  const again = await run('bash', ['-euo', 'pipefail', '-c', script], { env });
  expect(again.stdout).toBe('{"received":true,"duplicate":true}');
  const [job] = await receiver.queue.getWaiting();
  expect(job?.data.event).toEqual({ event: 'key.revoked', data: { id: 'key_demo' } });
});

it('with a wrong secret the same example gets 401', async () => {
  const { stdout } = await run(
    'bash',
    ['-euo', 'pipefail', '-c', readmeBlock('signing-example', HTTP_ANSWERS)],
    {
      env: {
        PATH: process.env.PATH ?? '',
        SECRET: 'not-the-secret',
        URL: `http://127.0.0.1:${server.port}/webhooks`,
      },
    },
  );
  expect(JSON.parse(stdout)).toEqual({ detail: 'no signature matched any configured secret' });
});

/** True while any process of the group is alive. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

it('"Try it with the sandbox", then the CLI\'s `send` against it: the README steps, as written, leave hello.* and demo-1.*', async () => {
  // The steps use the README's fixed ports (4010, 4443, 3000) and ./data under the repository.
  const prefixes = {
    QUEUE_PREFIX: `test-${randomUUID()}`,
    SANDBOX_PREFIX: `sandbox-${randomUUID()}`,
  };
  for (const name of ['hello.json', 'hello.wav', 'demo-1.json', 'demo-1.wav'])
    rmSync(join(root, 'data', 'audio', name), { force: true });
  const script = `${readmeBlock('sandbox-demo')}${readmeBlock('send-example')}`;
  const child = spawn('bash', ['-euo', 'pipefail', '-c', script], {
    cwd: root,
    env: { ...process.env, ...prefixes, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group: the sandbox and the service it starts in the background go with it.
    detached: true,
  });
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const pgid = child.pid!;
  try {
    const [code] = (await once(child, 'exit')) as [number];
    expect(code).toBe(0);
    expect(stdout).toMatch(/"batch_id":"batch_[0-9a-f]{16}","items":\[\{"id":"hello"\}\]/);
    expect(stdout).toMatch(/^hello\.json\nhello\.wav$/m);
    expect(stdout).toMatch(/^HTTP 202\n\{"received":true,"duplicate":false\}$/m);
    expect(stdout).toMatch(/^demo-1\.json\ndemo-1\.wav\nhello\.json\nhello\.wav$/m);
    for (const name of ['hello.wav', 'demo-1.wav']) {
      const wav = readFileSync(join(root, 'data', 'audio', name));
      expect(wav.subarray(0, 4).toString()).toBe('RIFF');
    }
  } finally {
    if (groupAlive(pgid)) process.kill(-pgid, 'SIGTERM');
    const deadline = Date.now() + 10_000;
    while (groupAlive(pgid) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const redis = new Redis(process.env.REDIS_URL ?? '');
    await deleteKeys(redis, `${prefixes.QUEUE_PREFIX}:*`);
    await deleteKeys(redis, `${prefixes.SANDBOX_PREFIX}:*`);
    redis.disconnect();
  }
}, 60_000);
