import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { startTestPipeline, type TestPipeline } from '../helpers/test-pipeline';
import { TEST_SECRET } from '../helpers/test-receiver';

/**
 * The operator CLI as a terminal or a pipe meets it: the real `node dist/cli/bin.js`, its
 * standard output read as bytes, over a delivery received and recorded in the test Redis.
 */
const BIN = join(__dirname, '..', '..', 'dist', 'cli', 'bin.js');

// ESC ] 0;…BEL retitles the terminal, ESC [31m colours what follows, U+202E reverses it.
const SLY_ID = 'key-\u001B]0;owned\u0007\u001B[31m\u202Egnp.exe\u009B';
/** Anything a terminal would obey or hide, a line break aside. */
const UNSAFE = /[\p{Cc}\p{Cf}\p{Cs}]/u;
const unsafeIn = (text: string) => text.replace(/\n/g, '').match(UNSAFE)?.[0];

let pipeline: TestPipeline;
let env: NodeJS.ProcessEnv;
const children = new Set<ChildProcess>();

beforeAll(async () => {
  pipeline = await startTestPipeline({});
  const { config } = pipeline.receiver;
  env = {
    PATH: process.env.PATH,
    WEBHOOK_SECRETS: TEST_SECRET,
    REDIS_URL: config.redisUrl,
    QUEUE_PREFIX: config.queuePrefix,
    AUDIO_DIR: pipeline.audioDir,
  };
  await pipeline
    .post(sampleDelivery('key.revoked', { id: SLY_ID, data: { reason: `leaked ${SLY_ID}` } }))
    .expect(202);
  await pipeline.settled(SLY_ID);
});
afterEach(async () => {
  await Promise.all(
    [...children].map(async (child) => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await once(child, 'exit');
      }
    }),
  );
  children.clear();
});
afterAll(async () => {
  await pipeline.close();
});

/** Runs the CLI; `closeStdout`: its standard output is a pipe whose reader has gone already. */
async function run(args: string[], { closeStdout = false } = {}) {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: pipeline.audioDir,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  if (closeStdout) child.stdout.destroy();
  else child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
  const [code] = (await once(child, 'close')) as [number | null];
  return {
    code,
    stdout: Buffer.concat(out).toString('utf8'),
    stderr: Buffer.concat(err).toString('utf8'),
  };
}

it('revoked-keys and inspect show a hostile id with its escapes visible, never raw', async () => {
  for (const args of [['revoked-keys'], ['inspect', SLY_ID]]) {
    const { code, stdout, stderr } = await run(args);
    expect({ args, code, stderr }).toEqual({ args, code: 0, stderr: '' });
    expect({ args, unsafe: unsafeIn(stdout) }).toEqual({ args, unsafe: undefined });
    expect(stdout).toContain('key-\\u{1b}]0;owned\\u{7}\\u{1b}[31m\\u{202e}gnp.exe\\u{9b}');
  }
});

it("with --json: one valid JSON document, its escapes JSON's own, that reads back the id", async () => {
  const keys = await run(['revoked-keys', '--json']);
  expect(keys.code).toBe(0);
  expect(unsafeIn(keys.stdout)).toBeUndefined();
  expect((JSON.parse(keys.stdout) as { id: string }[]).map((k) => k.id)).toEqual([SLY_ID]);
  const detail = await run(['inspect', SLY_ID, '--json']);
  expect(detail.code).toBe(0);
  expect(unsafeIn(detail.stdout)).toBeUndefined();
  expect(JSON.parse(detail.stdout)).toMatchObject({ id: SLY_ID, event: 'key.revoked' });
});

it('an error naming the id escapes it on standard error too', async () => {
  const { code, stdout, stderr } = await run(['inspect', SLY_ID, '--event', 'audio.ready']);
  expect(code).toBe(1);
  expect(stdout).toBe('');
  expect(stderr).toContain('\\u{202e}gnp.exe');
  expect(unsafeIn(stderr)).toBeUndefined();
});

it('output into a pipe closed early (`| head`) ends the command quietly, exit 0', async () => {
  for (const args of [['revoked-keys'], ['inspect', SLY_ID], ['inspect', SLY_ID, '--json']]) {
    const { code, stderr } = await run(args, { closeStdout: true });
    expect({ args, code, stderr }).toEqual({ args, code: 0, stderr: '' });
  }
});
