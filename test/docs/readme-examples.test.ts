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

/** A script running with bash in a process group of its own, and what it printed so far. */
interface Running {
  readonly pgid: number;
  output(): { readonly stdout: string; readonly stderr: string };
  /** Resolves once its standard output holds `text`; rejects if the script ends first. */
  printed(text: string): Promise<void>;
  /** Ends its standard input, with one line: a `read` in the script returns. */
  release(): void;
  /**
   * Waits for the script to end (at most `ms`, else it fails the test with the end of what it
   * printed); either way, nothing of its group outlives this call.
   */
  ended(ms: number): Promise<Ended>;
  /** Asks the group to end (SIGTERM), then waits for it as `ended` does. */
  stop(ms: number): Promise<Ended>;
}

/**
 * Starts `script` with bash in `cwd`, in a process group of its own so that whatever it starts in
 * the background is found by it.
 */
function startInGroup(script: string, cwd: string, env: NodeJS.ProcessEnv): Running {
  const child = spawn('bash', ['-euo', 'pipefail', '-c', script], {
    cwd,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  const pgid = child.pid ?? 0;
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // 'close', not 'exit': the output is whole once every holder of its pipes has gone.
  const closed = once(child, 'close') as Promise<[number | null]>;
  const ended = async (ms: number): Promise<Ended> => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => {
        resolve(undefined);
      }, ms);
    });
    try {
      const done = await Promise.race([closed, late]);
      if (done === undefined)
        throw new Error(
          `did not end within ${String(ms)} ms\n--- stdout ---\n${stdout.slice(-1500)}\n--- stderr ---\n${stderr.slice(-1500)}`,
        );
      return { code: done[0], stdout, stderr, leftRunning: groupAlive(pgid) };
    } finally {
      clearTimeout(timer);
      if (groupAlive(pgid)) process.kill(-pgid, 'SIGKILL');
    }
  };
  return {
    pgid,
    output: () => ({ stdout, stderr }),
    printed: (text) =>
      new Promise<void>((resolve, reject) => {
        const look = () => {
          if (!stdout.includes(text)) return;
          child.stdout.off('data', look);
          resolve();
        };
        child.stdout.on('data', look);
        look();
        void closed.then(() => {
          reject(
            new Error(
              `ended before printing ${text}\n--- stdout ---\n${stdout.slice(-1500)}\n--- stderr ---\n${stderr.slice(-1500)}`,
            ),
          );
        });
      }),
    release: () => {
      child.stdin.end('\n');
    },
    ended,
    stop: (ms) => {
      if (groupAlive(pgid)) process.kill(-pgid, 'SIGTERM');
      return ended(ms);
    },
  };
}

/**
 * Whether the steps hang, not how fast they run. The test's own bound below (720 s) holds the
 * prepare step and two runs of the steps.
 */
const SCRIPT_BOUND_MS = 300_000;

/**
 * What a run of the demo and the CLI's `send` printed and left in `dir`, as the README says:
 * checked, and its RUN returned.
 */
function expectDemoRan(stdout: string, dir: string): string {
  const id = /"batch_id":"batch_[0-9a-f]{16}","items":\[\{"id":"hello-(\d+)"\}\]/.exec(stdout)?.[1];
  expect(id).toBeDefined();
  const n = id ?? '';
  expect(stdout).toContain(`\nhello-${n}.json\nhello-${n}.wav\n`);
  expect(stdout).toMatch(/^HTTP 202\n\{"received":true,"duplicate":false\}$/m);
  expect(stdout).toContain(`\ndemo-${n}.json\ndemo-${n}.wav\nhello-${n}.json\nhello-${n}.wav\n`);
  for (const name of [`hello-${n}.wav`, `demo-${n}.wav`]) {
    const wav = readFileSync(join(dir, 'data', 'audio', name));
    expect(wav.subarray(0, 4).toString()).toBe('RIFF');
  }
  return n;
}

// The test's own lines, run before the stop step: the page the demo's last line names answers
// with the delivery, to the password the demo set.
const OPEN_THE_PAGE = `
curl -sS -o /dev/null -w 'page %{http_code}\\n' -u admin:$ADMIN_PASSWORD "http://127.0.0.1:$PORT/admin/deliveries?id=hello-$RUN"
curl -sS -u admin:$ADMIN_PASSWORD "http://127.0.0.1:$PORT/admin/api/deliveries?id=hello-$RUN"; echo
`;

it('"Try it with the sandbox" and the CLI\'s `send`, as written, refuse to run on the ports of a run still up, then run again in a second clone against one Redis, and the stop step ends it', async () => {
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
  // Both clones share the queue's and the sandbox's keys, as two clones on one Redis's defaults
  // do: whatever the first one's deliveries left there (the dedupe marks), the second one meets.
  const prefixes = {
    QUEUE_PREFIX: `test-${randomUUID()}`,
    SANDBOX_PREFIX: `sandbox-${randomUUID()}`,
  };
  const env = { ...process.env, ...ports, ...prefixes, LOG_LEVEL: 'warn' };
  const blocks = (...markers: string[]) => markers.map((marker) => readmeBlock(marker)).join('');
  const demo = blocks('demo-ports', 'sandbox-demo', 'send-example');
  let holder: Running | undefined;
  try {
    // The first run stays up, as a reader's does in another shell, until the test lets it run
    // the stop step...
    holder = startInGroup(`${demo}echo 'demo up'\nread -r _\n${blocks('demo-stop')}`, first, env);
    await holder.printed('demo up\n');
    const held = expectDemoRan(holder.output().stdout, first);

    // ...and the same steps again, in the same clone on the same ports, stop at once and say
    // which port is taken, before they send anything to the run that holds it.
    const again = await startInGroup(`${demo}${blocks('demo-stop')}`, first, env).ended(
      SCRIPT_BOUND_MS,
    );
    expect(again.stdout).not.toContain('batch_id');
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain(`port ${ports.SANDBOX_PORT} is taken`);
    expect(again.leftRunning).toBe(false);
    // The run that holds the ports was left alone: its processes still run and answer.
    expect(groupAlive(holder.pgid)).toBe(true);
    const ready = await fetch(`http://127.0.0.1:${ports.PORT}/readyz`);
    expect(ready.status).toBe(200);
    holder.release();
    const stopped = await holder.ended(SCRIPT_BOUND_MS);
    expect({ code: stopped.code, left: stopped.leftRunning }).toEqual({ code: 0, left: false });

    // A second clone on the same Redis, the stop step included: the demo ends with where to look.
    const ended = await startInGroup(
      `${demo}${OPEN_THE_PAGE}${blocks('demo-stop')}`,
      second,
      env,
    ).ended(SCRIPT_BOUND_MS);
    expect({ code: ended.code, stderr: ended.code === 0 ? '' : ended.stderr }).toEqual({
      code: 0,
      stderr: '',
    });
    const n = expectDemoRan(ended.stdout, second);
    expect(n).not.toBe(held);
    // `inspect hello-$RUN`: the delivery, its state in capitals, and its timeline from received.
    expect(ended.stdout).toMatch(new RegExp(`^audio\\.ready hello-${n}: [A-Z]+$`, 'm'));
    expect(ended.stdout).toMatch(/^timeline\n[\s\S]*\breceived\b/m);
    // The page's address and the password, and the page itself behind them.
    const where = /^inspector: (http:\S+) +user admin, password (\S+)$/m.exec(ended.stdout);
    expect(where?.[1]).toBe(`http://127.0.0.1:${ports.PORT}/admin/deliveries`);
    expect(where?.[2]?.length).toBeGreaterThanOrEqual(16);
    expect(ended.stdout).toContain('\npage 200\n');
    expect(ended.stdout).toContain(`"id":"hello-${n}"`);
    // The stop step left nothing running: the sandbox and the service are gone.
    expect(ended.leftRunning).toBe(false);
  } finally {
    await holder?.stop(SCRIPT_BOUND_MS).catch(() => undefined);
    const redis = new Redis(process.env.REDIS_URL ?? '');
    await deleteKeys(redis, `${prefixes.QUEUE_PREFIX}:*`);
    await deleteKeys(redis, `${prefixes.SANDBOX_PREFIX}:*`);
    redis.disconnect();
    rmSync(first, { recursive: true, force: true });
    rmSync(second, { recursive: true, force: true });
  }
}, 720_000);
