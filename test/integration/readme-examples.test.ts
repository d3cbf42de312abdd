import { execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { promisify } from 'node:util';
import { events as exampleEvents } from '../../src/examples/events';
import { customEvents } from '../../src/hooks/custom-events';
import { serve } from '../../src/http-server/serve';
import { createTestReceiver, deleteKeys, type TestReceiver } from '../helpers/test-receiver';
import { freePort } from '../../harness/private-redis';
import { copyOfRepository } from '../helpers/repository-copy';
import { groupAlive } from '../helpers/spawn-service';

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
  expect(JSON.parse(job?.data.body ?? '')).toEqual({
    event: 'key.revoked',
    data: { id: 'key_demo' },
  });
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

it("the README's `send` of an event of your own (src/examples/events.ts's), as written, is accepted", async () => {
  const custom = await createTestReceiver({}, { customEvents: customEvents(exampleEvents) });
  const customServer = await serve(custom.listener, 0, '127.0.0.1');
  try {
    const { stdout } = await run(
      'bash',
      ['-euo', 'pipefail', '-c', readmeBlock('custom-send-example')],
      {
        cwd: root,
        env: {
          PATH: process.env.PATH ?? '',
          PORT: String(customServer.port),
          WEBHOOK_SECRETS: custom.config.webhookSecrets[0] ?? '',
          CDN_URL: 'https://127.0.0.1:4443',
        },
      },
    );
    expect(stdout).toMatch(/^HTTP 202\n\{"received":true,"duplicate":false\}$/m);
    const [job] = await custom.queue.getWaiting();
    expect(JSON.parse(job?.data.body ?? '')).toMatchObject({
      event: 'voice.converted',
      data: { id: 'vc-1', voice: 'ember', audio_url: 'https://127.0.0.1:4443/audio/sample.wav' },
    });
  } finally {
    await customServer.close();
    await custom.close();
  }
});

interface Ended {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** Whether a process it started outlived it. */
  readonly leftRunning: boolean;
}

/**
 * Runs `script` with bash in `cwd`, in a process group of its own so that whatever it starts in
 * the background is found by it. A script that has not ended within `ms` fails the test with the
 * end of what it printed; either way, nothing of the group outlives this call.
 */
async function runInGroup(
  script: string,
  cwd: string,
  env: NodeJS.ProcessEnv,
  ms: number,
): Promise<Ended> {
  const child = spawn('bash', ['-euo', 'pipefail', '-c', script], {
    cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const pgid = child.pid ?? 0;
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // 'close', not 'exit': the output is whole once every holder of its pipes has gone.
  const closed = once(child, 'close') as Promise<[number | null]>;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => {
      resolve(undefined);
    }, ms);
  });
  try {
    const ended = await Promise.race([closed, late]);
    if (ended === undefined)
      throw new Error(
        `did not end within ${String(ms)} ms\n--- stdout ---\n${stdout.slice(-1500)}\n--- stderr ---\n${stderr.slice(-1500)}`,
      );
    return { code: ended[0], stdout, stderr, leftRunning: groupAlive(pgid) };
  } finally {
    clearTimeout(timer);
    if (groupAlive(pgid)) process.kill(-pgid, 'SIGKILL');
  }
}

/**
 * Whether the steps hang, not how fast they run. The test's own bound below (720 s) holds the
 * prepare step and two runs of the steps.
 */
const SCRIPT_BOUND_MS = 300_000;

it('"Try it with the sandbox", the CLI\'s `send` against it and the stop step, as written, run twice against one Redis (a second clone), on ports of their own', async () => {
  // A copy of the repository, as a clone: the steps write ./data there, never into this checkout.
  const first = copyOfRepository({ keepCustom: true });
  // What `npm ci` does last (its prepare script): the build the CLI runs from, and the one the
  // demo's `npm start` then finds current.
  await run('npm', ['run', '--silent', 'prepare'], { cwd: first });
  // A second clone of the same build, taken before the first has run: no ./data of its own.
  const second = mkdtempSync(join(tmpdir(), 'aw-fork-'));
  cpSync(first, second, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true });
  const ports = {
    PORT: String(await freePort()),
    SANDBOX_PORT: String(await freePort()),
    SANDBOX_CDN_PORT: String(await freePort()),
  };
  // Both runs share the queue's and the sandbox's keys, as two clones on one Redis's defaults do:
  // whatever the first run's deliveries left there (the dedupe marks), the second one meets.
  const prefixes = {
    QUEUE_PREFIX: `test-${randomUUID()}`,
    SANDBOX_PREFIX: `sandbox-${randomUUID()}`,
  };
  const script = ['demo-ports', 'sandbox-demo', 'send-example', 'demo-stop']
    .map((marker) => readmeBlock(marker))
    .join('');
  const runs: string[] = [];
  try {
    for (const dir of [first, second]) {
      const ended = await runInGroup(
        script,
        dir,
        { ...process.env, ...ports, ...prefixes, LOG_LEVEL: 'warn' },
        // Past the script's own bounds (four waits of 60 s at most): a wait that gives up ends
        // the script with its message, which names what it waited for.
        SCRIPT_BOUND_MS,
      );
      expect({ code: ended.code, stderr: ended.code === 0 ? '' : ended.stderr }).toEqual({
        code: 0,
        stderr: '',
      });
      const id = /"batch_id":"batch_[0-9a-f]{16}","items":\[\{"id":"hello-(\d+)"\}\]/.exec(
        ended.stdout,
      )?.[1];
      expect(id).toBeDefined();
      const n = id ?? '';
      runs.push(n);
      expect(ended.stdout).toContain(`\nhello-${n}.json\nhello-${n}.wav\n`);
      expect(ended.stdout).toMatch(/^HTTP 202\n\{"received":true,"duplicate":false\}$/m);
      expect(ended.stdout).toContain(
        `\ndemo-${n}.json\ndemo-${n}.wav\nhello-${n}.json\nhello-${n}.wav\n`,
      );
      for (const name of [`hello-${n}.wav`, `demo-${n}.wav`]) {
        const wav = readFileSync(join(dir, 'data', 'audio', name));
        expect(wav.subarray(0, 4).toString()).toBe('RIFF');
      }
      // The stop step left nothing running: the sandbox and the service are gone.
      expect(ended.leftRunning).toBe(false);
    }
    expect(new Set(runs).size).toBe(2);
  } finally {
    const redis = new Redis(process.env.REDIS_URL ?? '');
    await deleteKeys(redis, `${prefixes.QUEUE_PREFIX}:*`);
    await deleteKeys(redis, `${prefixes.SANDBOX_PREFIX}:*`);
    redis.disconnect();
    rmSync(first, { recursive: true, force: true });
    rmSync(second, { recursive: true, force: true });
  }
}, 720_000);
