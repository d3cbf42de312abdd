import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, watch, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { request } from 'undici';
import { serve } from '../../src/http-server/serve';
import { createProviderClient } from '../../src/provider/create-provider-client';
import { createLocalBlobArea } from '../../src/provider/local-blob-area';
import { ProviderError } from '../../src/provider/provider-errors';
import { freePort } from '../../harness/private-redis';
import { startSandboxProcess, type SandboxProcess } from '../../harness/sandbox-process';
import { startTestPipeline } from '../helpers/test-pipeline';
import { deleteKeys } from '../helpers/test-receiver';
import { afterTest, killAfterTest } from '../helpers/after-test';

// The provider client against the sandbox: real Redis, real processes, loopback only.
// Long enough that a process spawned on a loaded machine still lands in the window another filled.
const WINDOW_MS = 5000;
const BIN = join(__dirname, '..', '..', 'bin', 'audio-webhooks.js');
const DIST = join(__dirname, '..', '..', 'dist', 'index.js');
const redis = new Redis(process.env.REDIS_URL ?? '');
let sbx: SandboxProcess;
let prefix: string;
/** Where the sandbox delivers its webhooks. */
let webhookPort: number;

interface Logged {
  key_id: string | null;
  endpoint: string;
  at: number;
  done: number;
  status: number;
  retry_after?: number;
}

beforeEach(async () => {
  prefix = `client-${Math.random().toString(16).slice(2)}`;
  webhookPort = await freePort();
  sbx = await startSandboxProcess({
    flags: {
      'rate-window-ms': String(WINDOW_MS),
      'time-scale': '0.001',
      'webhook-url': `http://127.0.0.1:${webhookPort}/webhooks`,
    },
    env: { WEBHOOK_SECRETS: 'whsec_client_test' },
  });
  afterTest(async () => {
    await sbx.stop();
    await deleteKeys(redis, `${sbx.prefix}:*`);
    await deleteKeys(redis, `${prefix}:*`);
  });
});
afterAll(() => {
  redis.disconnect();
});

const keyEnv = (...keys: { id: string; token: string }[]) =>
  keys.map((k) => `${k.id}=${k.token}`).join(',');
const newKey = async () =>
  (await sbx.call('POST', '/sandbox/keys')).body as { id: string; token: string };
const log = async () => (await sbx.call('GET', '/sandbox/requests')).body as Logged[];

/** An in-process client on the sandbox, this test's Redis and prefix; closed after the test. */
async function client(keys: { id: string; token: string }[], cacheTtlSeconds = 0) {
  const created = await createProviderClient({
    baseUrl: sbx.info.api,
    keys,
    redis,
    prefix,
    windowMs: WINDOW_MS,
    cacheTtlSeconds,
  });
  afterTest(() => created.close());
  return created;
}

/** The CLI's AUDIO_DIR (its TTS cache bodies): a temp folder, never the checkout's ./data. */
const CLI_AUDIO_DIR = mkdtempSync(join(tmpdir(), 'aw-cli-audio-'));

/** The CLI as a process, with the client's settings. */
function cli(args: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: {
      PATH: process.env.PATH ?? '',
      AUDIO_DIR: CLI_AUDIO_DIR,
      REDIS_URL: process.env.REDIS_URL ?? '',
      QUEUE_PREFIX: prefix,
      PROVIDER_BASE_URL: sbx.info.api,
      PROVIDER_API_KEYS: keyEnv(sbx.info.key),
      PROVIDER_RATE_WINDOW_MS: String(WINDOW_MS),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  killAfterTest(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = once(child, 'exit').then(([code]) => ({
    code: code as number | null,
    stdout,
    stderr,
  }));
  return { child, exited };
}

function linesFile(count: number, tag: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'aw-lines-')), 'lines.txt');
  writeFileSync(
    file,
    Array.from({ length: count }, (_unused, i) => `${tag} line ${i + 1}`).join('\n'),
  );
  return file;
}

/** The most requests any window of `windowMs` holds, by arrival. */
function busiestWindow(times: number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while ((sorted[i] ?? 0) - (sorted[j] ?? 0) >= windowMs) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

it('1. three processes share one key: 150 TTS requests, no 429, never more than 60 in any window', async () => {
  const runs = [0, 1, 2].map((n) =>
    cli([
      'tts',
      '--file',
      linesFile(50, `p${n}`),
      '--voice',
      'alloy',
      '--out-dir',
      mkdtempSync(join(tmpdir(), 'aw-out-')),
    ]),
  );
  const results = await Promise.all(runs.map((run) => run.exited));
  expect(results.map((r) => r.code)).toEqual([0, 0, 0]);
  const requests = (await log()).filter((r) => r.key_id === sbx.info.key.id);
  expect(requests.filter((r) => r.status === 429)).toEqual([]);
  expect(requests.filter((r) => r.status === 200)).toHaveLength(150);
  expect(
    busiestWindow(
      requests.map((r) => r.at),
      WINDOW_MS,
    ),
  ).toBeLessThanOrEqual(60);
  // A bound on a limiter that stalls (three windows hold them all), not a measure of its speed.
  const first = Math.min(...requests.map((r) => r.at));
  const last = Math.max(...requests.map((r) => r.done));
  expect(last - first).toBeLessThan(10 * WINDOW_MS);
}, 120_000);

it('2. limits are per key and per endpoint', async () => {
  const second = await newKey();
  const first = await client([sbx.info.key]);
  const other = await client([second], 86_400);

  await Promise.all(
    Array.from({ length: 60 }, (_unused, i) => first.tts({ text: `fill ${i}`, voice: 'alloy' })),
  );
  // The first key's TTS window is full; its voices and the second key's TTS are not: both are
  // answered before the first key's next TTS, which waits for the window to pass.
  const order: string[] = [];
  const waiting = first.tts({ text: 'next window', voice: 'alloy' }).then(() => order.push('tts'));
  await first.voices().then(() => order.push('voices'));
  await other.tts({ text: 'other key', voice: 'alloy' }).then(() => order.push('other key'));
  await waiting;
  expect(order).toEqual(['voices', 'other key', 'tts']);
  const requests = await log();
  expect(requests.filter((r) => r.status === 429)).toEqual([]);
  expect(requests.filter((r) => r.key_id === second.id)).toHaveLength(1);
});

it('3. a 429 pauses every process until its Retry-After; all requests succeed in the end', async () => {
  // Each CLI reads its lines from a FIFO: once both have opened theirs (started up, about to
  // send), the window is filled, then the lines go. A loaded machine's start-up, longer than
  // the window, let the CLIs send after it had passed, and no 429 came.
  const fifos = [0, 1].map((n) => {
    const fifo = join(mkdtempSync(join(tmpdir(), 'aw-lines-')), `q${String(n)}.fifo`);
    execFileSync('mkfifo', [fifo]);
    return fifo;
  });
  const runs = fifos.map((fifo) =>
    cli([
      'tts',
      '--file',
      fifo,
      '--voice',
      'alloy',
      '--out-dir',
      mkdtempSync(join(tmpdir(), 'aw-out-')),
    ]),
  );
  // Opening a FIFO to write waits until its reader has opened it.
  const writers = await Promise.all(fifos.map((fifo) => open(fifo, 'w')));
  // A client without the shared Redis fills the key's window behind the limiter's back.
  await Promise.all(
    Array.from({ length: 60 }, (_unused, i) =>
      request(`${sbx.info.api}/v1/tts`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${sbx.info.key.token}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ text: `rogue ${i}`, voice: 'alloy' }),
      }).then((res) => res.body.dump()),
    ),
  );
  await Promise.all(
    writers.map(async (writer, n) => {
      await writer.writeFile(
        Array.from({ length: 5 }, (_unused, i) => `q${String(n)} line ${String(i + 1)}`).join('\n'),
      );
      await writer.close();
    }),
  );
  const results = await Promise.all(runs.map((run) => run.exited));
  expect(results.map((r) => r.code)).toEqual([0, 0]);
  const requests = (await log()).filter((r) => !/^rogue/.test(r.endpoint));
  const limited = requests.filter((r) => r.status === 429);
  expect(limited.length).toBeGreaterThan(0);
  for (const refusal of limited) {
    const until = refusal.at + (refusal.retry_after ?? 0) * 1000;
    // Requests already on their way when the 429 was sent may land after it: within a second
    // on a loaded machine (10 did 50 ms after it, with other suites running). The rest of the
    // wait, about 4 s of the 5 s window, must see none.
    const early = requests.filter((r) => r.at > refusal.done + 1000 && r.at < until - 50);
    expect(early).toEqual([]);
  }
  expect(requests.filter((r) => r.status === 200).length).toBe(60 + 10);
});

it('4. a revoked key is never used again once recorded; the next takes over; none left is exit 1 naming them', async () => {
  const second = await newKey();
  // The receiver and workers that record key.revoked, where the sandbox delivers.
  const pipeline = await startTestPipeline({
    WEBHOOK_SECRETS: 'whsec_client_test',
    QUEUE_PREFIX: prefix,
  });
  afterTest(() => pipeline.close());
  const server = await serve(pipeline.receiver.listener, webhookPort, '127.0.0.1');
  afterTest(() => server.close());
  const both = await client([sbx.info.key, second]);
  await both.tts({ text: 'before', voice: 'alloy' });

  await sbx.call('POST', `/sandbox/keys/${sbx.info.key.id}/revoke`);
  await pipeline.settled(sbx.info.key.id);
  const recorded = Date.now();
  for (let i = 0; i < 5; i++) await both.tts({ text: `after ${i}`, voice: 'alloy' });
  const requests = await log();
  expect(requests.filter((r) => r.key_id === sbx.info.key.id && r.at >= recorded)).toEqual([]);
  expect(requests.filter((r) => r.key_id === second.id && r.status === 200)).toHaveLength(5);
  expect(both.revokedKeys()).toEqual([sbx.info.key.id]);

  await sbx.call('POST', `/sandbox/keys/${second.id}/revoke`);
  await pipeline.settled(second.id);
  const run = cli(['tts', 'none left', '--voice', 'alloy', '--out', join(tmpdir(), 'none.wav')], {
    PROVIDER_API_KEYS: keyEnv(sbx.info.key, second),
  });
  const { code, stderr } = await run.exited;
  expect(code).toBe(1);
  expect(stderr).toContain(`no API key left (revoked: ${sbx.info.key.id}, ${second.id})`);
});

it('a 401 moves on to the next key at once; another 4xx is a ProviderError with the detail, not retried', async () => {
  const second = await newKey();
  // Revoked at the provider, but no key.revoked recorded here yet: the 401 is the only news.
  await sbx.call('POST', `/sandbox/keys/${sbx.info.key.id}/revoke`);
  const both = await client([sbx.info.key, second]);
  await both.tts({ text: 'one', voice: 'alloy' });
  await both.tts({ text: 'two', voice: 'alloy' });
  const statuses = (await log()).map((r) => [r.key_id, r.status]);
  expect(statuses).toEqual([
    [sbx.info.key.id, 401],
    [second.id, 200],
    [second.id, 200],
  ]);

  const refused = both.tts({ text: '', voice: 'alloy' });
  await expect(refused).rejects.toBeInstanceOf(ProviderError);
  await expect(refused).rejects.toMatchObject({
    status: 400,
    detail: expect.stringMatching(/^text: /),
  });
  expect((await log()).filter((r) => r.status === 400)).toHaveLength(1);
});

it('5. the same text and voice 10 times at once from 2 processes: one request, byte-identical audio', async () => {
  const out = mkdtempSync(join(tmpdir(), 'aw-same-'));
  const script = `
    const { Redis } = require('ioredis');
    const { createProviderClient, createLocalBlobArea } = require(${JSON.stringify(DIST)});
    (async () => {
      const redis = new Redis(process.env.REDIS_URL);
      const client = await createProviderClient({ baseUrl: process.env.BASE, keys: [{ id: process.env.KEY_ID, token: process.env.TOKEN }], redis, prefix: process.env.PREFIX, cacheArea: createLocalBlobArea(process.env.CACHE) });
      const results = await Promise.all(Array.from({ length: 5 }, () => client.tts({ text: 'the same words', voice: 'river' })));
      results.forEach((r, i) => require('fs').writeFileSync(process.env.OUT + '/' + process.env.N + '-' + i + '.wav', r.audio));
      await client.close(); redis.disconnect();
    })().catch((e) => { console.error(e); process.exit(1); });`;
  const runs = [0, 1].map((n) => {
    const child = spawn(process.execPath, ['-e', script], {
      cwd: join(__dirname, '..', '..'),
      env: {
        PATH: process.env.PATH ?? '',
        REDIS_URL: process.env.REDIS_URL ?? '',
        BASE: sbx.info.api,
        KEY_ID: sbx.info.key.id,
        TOKEN: sbx.info.key.token,
        PREFIX: prefix,
        OUT: out,
        CACHE: join(out, '.tts-cache'),
        N: String(n),
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    killAfterTest(child);
    return once(child, 'exit').then(([code]) => code as number);
  });
  expect(await Promise.all(runs)).toEqual([0, 0]);
  expect((await log()).filter((r) => r.endpoint === '/v1/tts')).toHaveLength(1);
  const files = readdirSync(out)
    .filter((name) => name.endsWith('.wav'))
    .map((name) => readFileSync(join(out, name)));
  expect(files).toHaveLength(10);
  for (const file of files) expect(file.equals(files[0]!)).toBe(true);
});

it('6. tts --file with 25 lines: one request at a time; killed after 10, run again writes only the rest', async () => {
  const file = linesFile(25, 'resume');
  const outDir = mkdtempSync(join(tmpdir(), 'aw-resume-'));
  // 5 per second, so the run can be stopped part way.
  const slow = {
    PROVIDER_LIMITS: 'tts=5',
    TTS_CACHE_TTL_SECONDS: '0',
    PROVIDER_RATE_WINDOW_MS: '1000',
  };
  const first = cli(['tts', '--file', file, '--voice', 'sage', '--out-dir', outDir], slow);
  await new Promise<void>((resolve) => {
    const watcher = watch(outDir, () => {
      if (readdirSync(outDir).filter((name) => name.endsWith('.wav')).length >= 10) {
        watcher.close();
        resolve();
      }
    });
  });
  first.child.kill('SIGKILL');
  await first.exited;
  const before = readdirSync(outDir).filter((name) => name.endsWith('.wav')).length;
  const requestsBefore = (await log()).length;
  const second = await cli(['tts', '--file', file, '--voice', 'sage', '--out-dir', outDir], slow)
    .exited;
  expect(second.code).toBe(0);
  expect(second.stdout).toContain(`${25 - before} written, ${before} already there`);
  expect(readdirSync(outDir).filter((name) => name.endsWith('.wav'))).toHaveLength(25);
  const all = await log();
  expect(all.length - requestsBefore).toBe(25 - before);
  const byArrival = [...all].sort((a, b) => a.at - b.at);
  for (let i = 1; i < byArrival.length; i++) {
    // The first run's in-flight request at the kill may overlap the second run's first; no more.
    if (byArrival[i - 1]!.at < all[requestsBefore]!.at) continue;
    expect(byArrival[i]!.at).toBeGreaterThanOrEqual(byArrival[i - 1]!.done);
  }
});

it("7. the TTS cache keeps the audio out of the queue's Redis: only a small index entry there", async () => {
  const cacheDir = mkdtempSync(join(tmpdir(), 'aw-cache-'));
  const cached = await createProviderClient({
    baseUrl: sbx.info.api,
    keys: [sbx.info.key],
    redis,
    prefix,
    windowMs: WINDOW_MS,
    cacheArea: createLocalBlobArea(cacheDir),
  });
  afterTest(() => cached.close());
  const texts = ['first words', 'second words', 'third words'];
  const fresh = await Promise.all(texts.map((text) => cached.tts({ text, voice: 'river' })));
  const again = await Promise.all(texts.map((text) => cached.tts({ text, voice: 'river' })));
  expect(again.map((r) => r.cached)).toEqual([true, true, true]);
  again.forEach((r, i) => {
    expect(r.audio.equals(fresh[i]!.audio)).toBe(true);
  });
  expect((await log()).filter((r) => r.endpoint === '/v1/tts')).toHaveLength(3);
  // Every key the client wrote under the prefix is small: the bodies (tens of KB) are not there.
  const keys = await redis.keys(`${prefix}:*`);
  expect(keys.length).toBeGreaterThan(0);
  const sizes = await Promise.all(
    keys.map(async (key) => Number(await redis.memory('USAGE', key))),
  );
  expect(Math.max(...sizes)).toBeLessThan(1024);
  expect(Math.min(...fresh.map((r) => r.audio.length))).toBeGreaterThan(4096);
  expect(readdirSync(cacheDir).filter((name) => !name.startsWith('.'))).toHaveLength(3);
});

it('8. a process killed while it holds the TTS lease stalls the others about 2 s, not a minute', async () => {
  // A provider whose first answer never comes: the first CLI holds the lease when it is killed.
  let calls = 0;
  let signalArrived!: () => void;
  const arrived = new Promise<void>((resolve) => (signalArrived = resolve));
  const wav = randomBytes(20_000);
  const provider = await serve(
    (req, res) => {
      calls++;
      if (calls === 1) {
        signalArrived();
        return; // never answered
      }
      req.resume();
      res.writeHead(200, { 'content-type': 'audio/wav' }).end(wav);
    },
    0,
    '127.0.0.1',
  );
  afterTest(() => provider.close());
  const audioDir = mkdtempSync(join(tmpdir(), 'aw-lease-'));
  const env = {
    PROVIDER_BASE_URL: `http://127.0.0.1:${String(provider.port)}`,
    PROVIDER_API_KEYS: 'key_a=sk_a',
    AUDIO_DIR: audioDir,
  };
  const args = ['tts', 'held by the dead', '--voice', 'sage', '--out'];
  const first = cli([...args, join(audioDir, 'first.wav')], env);
  await arrived;
  first.child.kill('SIGKILL');
  await first.exited;
  const started = performance.now();
  const second = await cli([...args, join(audioDir, 'second.wav')], env).exited;
  const ms = performance.now() - started;
  expect(second.code).toBe(0);
  expect(readFileSync(join(audioDir, 'second.wav')).equals(wav)).toBe(true);
  // The lease lives 2 s unless renewed: the second waits that out, not a minute (a bound on a
  // hang, not a speed: a loaded machine adds the CLI's start-up).
  expect(ms).toBeLessThan(30_000);
  expect(calls).toBe(2);
});
