import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { createArchive } from '../../src/archive/archive';
import { createLocalFileArea } from '../../src/storage/local/local-file-area';
import { killAfterTest } from '../helpers/after-test';
import { runCliProcess } from '../helpers/replay-app';
import { deleteKeys } from '../helpers/test-receiver';

// `replay` on a terminal says how many it will queue and asks first (unless --yes); run by a
// script or a test (no terminal) it does not ask. The terminal is util-linux's `script`.
const BIN = join(__dirname, '..', '..', 'bin', 'audio-webhooks.js');
const redis = new Redis(process.env.REDIS_URL ?? '');
const dir = mkdtempSync(join(tmpdir(), 'aw-confirm-'));
const env = {
  REDIS_URL: process.env.REDIS_URL ?? '',
  QUEUE_PREFIX: `test-${randomUUID()}`,
  AUDIO_DIR: join(dir, 'audio'),
};
const queued = () => redis.zcard(`${env.QUEUE_PREFIX}:deliveries:prioritized`);

beforeAll(async () => {
  const archive = createArchive(createLocalFileArea(join(env.AUDIO_DIR, '.archive')));
  for (const name of ['one', 'two', 'three'])
    await archive.record({
      delivery: { event: 'key.revoked', data: { id: name } },
      jobId: `job-${name}`,
      receivedAt: new Date(Date.now() - 60_000).toISOString(),
    });
});
afterAll(async () => {
  await deleteKeys(redis, `${env.QUEUE_PREFIX}:*`);
  redis.disconnect();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs the CLI on a pseudo-terminal; types `answer` and Enter once the question is asked. */
async function onTerminal(args: string, answer?: string) {
  const child = spawn('script', ['-qfec', `'${process.execPath}' '${BIN}' ${args}`, '/dev/null'], {
    env: { PATH: process.env.PATH ?? '', TERM: 'xterm', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  // A CLI that never asks, or never ends, is killed with its terminal (a hang-up ends the CLI).
  killAfterTest(child);
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    if (answer !== undefined && output.includes('continue? [y/N]')) {
      child.stdin.write(`${answer}\r`);
      answer = undefined;
    }
  });
  const [code] = (await once(child, 'exit')) as [number];
  child.stdin.end();
  return { code, output: output.replace(/\r/g, '') };
}

it('on a terminal it says how many and asks: n queues nothing (exit 1), y queues them', async () => {
  const declined = await onTerminal('replay --since 1h', 'n');
  expect(declined.output).toContain(
    '3 archived deliveries will be put on the queue again (handled as new: hooks run again); continue? [y/N]',
  );
  expect(declined.output).toContain('replay cancelled: nothing was put on the queue');
  expect(declined.code).toBe(1);
  expect(await queued()).toBe(0);

  const accepted = await onTerminal('replay --since 1h', 'y');
  expect(accepted.output).toContain('continue? [y/N]');
  expect(accepted.output).toContain('3 deliveries put on the queue again');
  expect(accepted.code).toBe(0);
  expect(await queued()).toBe(3);
}, 30_000);

it('--yes does not ask, on a terminal; without a terminal nothing asks', async () => {
  const yes = await onTerminal('replay --since 1h --yes');
  expect(yes.code).toBe(0);
  expect(yes.output).not.toContain('continue?');
  expect(yes.output).toMatch(/put on the queue again/);

  const piped = await runCliProcess(['replay', '--id', 'two'], env);
  expect(piped.code).toBe(0);
  expect(piped.stderr).not.toContain('continue?');
  expect(piped.stdout).toMatch(/put on the queue again/);
}, 30_000);
