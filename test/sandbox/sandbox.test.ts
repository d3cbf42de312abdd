import { spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { request } from 'undici';
import { runCli } from '../../src/cli/main';
import { serve } from '../../src/http-server/serve';
import { freePort } from '../../harness/private-redis';
import {
  deliveredBy,
  eventually,
  startSandboxProcess,
  type SandboxProcess,
} from '../../harness/sandbox-process';
import { serviceSettings } from '../helpers/service-settings';
import { sigtermAtLine, spawnService, type ServiceProcess } from '../helpers/spawn-service';
import { createTestReceiver, deleteKeys, type TestReceiver } from '../helpers/test-receiver';

// The sandbox as a user runs it (`audio-webhooks sandbox`, a real process) against the receiver.
const SECRET = 'whsec_sandbox_test';
const redis = new Redis(process.env.REDIS_URL ?? '');
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(() => {
  redis.disconnect();
});

interface Delivery {
  id: string;
  event: string;
  data_id: string;
  state: string;
  attempts: { at: number; status?: number; error?: string; ms: number; fault?: string }[];
}

async function sandbox(options: Parameters<typeof startSandboxProcess>[0] = {}) {
  const started = await startSandboxProcess({
    ...options,
    env: { WEBHOOK_SECRETS: SECRET, ...options.env },
  });
  cleanups.push(async () => {
    await started.stop();
    await deleteKeys(redis, `${started.prefix}:*`);
  });
  return started;
}

async function deliveries(sbx: SandboxProcess, query = ''): Promise<Delivery[]> {
  return (await sbx.call('GET', `/sandbox/deliveries${query}`)).body as Delivery[];
}

/** An in-process receiver on a loopback port: its config is the test's to choose. */
async function receiverOn(port: number, env: Record<string, string>): Promise<TestReceiver> {
  const receiver = await createTestReceiver(env);
  const server = await serve(receiver.listener, port, '127.0.0.1');
  cleanups.push(async () => {
    await server.close();
    await receiver.close();
  });
  return receiver;
}

it('the whole loop: a 200-item batch through sandbox, receiver and workers (real processes)', async () => {
  const webhookPort = await freePort();
  const sbx = await sandbox({
    flags: { 'time-scale': '0.001', 'webhook-url': `http://127.0.0.1:${webhookPort}/webhooks` },
  });
  const prefix = `test-${randomUUID()}`;
  const audioDir = join(sbx.dir, 'received');
  const service: ServiceProcess = spawnService(
    serviceSettings({
      WEBHOOK_SECRETS: SECRET,
      QUEUE_PREFIX: prefix,
      AUDIO_DIR: audioDir,
      // The lines the sandbox prints.
      ...deliveredBy(sbx, webhookPort),
    }),
  );
  cleanups.push(async () => {
    service.child.kill('SIGTERM');
    await service.exited;
    await deleteKeys(redis, `${prefix}:*`);
  });
  await service.waitForLog('audio-webhooks started');

  const items = Array.from({ length: 200 }, (_unused, i) => ({
    id: `item-${i}`,
    text: `item number ${i}`,
    voice: i % 2 === 0 ? 'alloy' : 'ember',
  }));
  const fail = items.filter((_item, i) => i % 20 === 7).map((item) => item.id);
  const batch = await sbx.call('POST', '/v1/tts/batch', { items, fail }, sbx.info.key.token);
  expect(batch.status).toBe(202);
  expect((batch.body as { items: { id: string }[] }).items).toHaveLength(200);

  const all = await eventually(async () => {
    const found = await deliveries(sbx);
    return found.length === 200 && found.every((d) => d.state === 'delivered') ? found : undefined;
  });
  expect(
    all
      .filter((d) => d.event === 'audio.failed')
      .map((d) => d.data_id)
      .sort(),
  ).toEqual([...fail].sort());
  // Every audio file on disk, byte for byte what the sandbox's CDN served.
  const metadata = await eventually(() => {
    const names = readdirSync(audioDir).filter((name) => name.endsWith('.json'));
    return Promise.resolve(names.length === 190 ? names : undefined);
  });
  for (const name of metadata) {
    const meta = JSON.parse(readFileSync(join(audioDir, name), 'utf8')) as {
      file: string;
      sha256: string;
      audio_url: string;
    };
    const served = readFileSync(join(sbx.dir, 'audio', new URL(meta.audio_url).pathname.slice(7)));
    const stored = readFileSync(join(audioDir, meta.file));
    expect(createHash('sha256').update(stored).digest('hex')).toBe(
      createHash('sha256').update(served).digest('hex'),
    );
    expect(meta.sha256).toBe(createHash('sha256').update(served).digest('hex'));
  }
  let stdout = '';
  const code = await runCli(
    ['failures', '--json'],
    { REDIS_URL: process.env.REDIS_URL ?? '', QUEUE_PREFIX: prefix },
    { out: (t) => (stdout += t) },
    { out: () => undefined },
  );
  expect(code).toBe(0);
  expect((JSON.parse(stdout) as { id: string }[]).map((f) => f.id).sort()).toEqual(
    [...fail].sort(),
  );
});

describe('faults', () => {
  let sbx: SandboxProcess;
  let port: number;
  beforeEach(async () => {
    port = await freePort();
    sbx = await sandbox({
      flags: { 'time-scale': '0.001', 'webhook-url': `http://127.0.0.1:${port}/webhooks` },
      env: { WEBHOOK_SECRETS: `${SECRET},whsec_next` },
    });
  });

  async function send(fault: string): Promise<Delivery> {
    const sent = await sbx.call('POST', '/sandbox/events', {
      event: 'key.revoked',
      data: { id: `key_${fault}_${randomUUID()}` },
      faults: [fault],
    });
    expect(sent.status).toBe(202);
    const { id } = sent.body as { id: string };
    return eventually(async () => {
      const [found] = await deliveries(sbx, `?id=${id}`);
      return found?.state === 'delivered' ? found : undefined;
    });
  }

  it.each(['wrong_secret', 'stale_timestamp', 'future_timestamp', 'tampered_body'])(
    '%s: the receiver answers 401, and the clean retry is accepted',
    async (fault) => {
      await receiverOn(port, { WEBHOOK_SECRETS: SECRET });
      const delivery = await send(fault);
      expect(delivery.attempts.map((a) => [a.status, a.fault])).toEqual([
        [401, fault],
        [202, undefined],
      ]);
    },
  );

  it('duplicate: the same delivery twice at once, one 202 and one 200', async () => {
    await receiverOn(port, { WEBHOOK_SECRETS: SECRET });
    const delivery = await send('duplicate');
    expect(delivery.attempts.map((a) => a.status).sort()).toEqual([200, 202]);
  });

  it.each([[SECRET], ['whsec_next']])(
    'rotated_secret: two v1, accepted by a receiver that knows only %s',
    async (secret) => {
      await receiverOn(port, { WEBHOOK_SECRETS: secret });
      const delivery = await send('rotated_secret');
      expect(delivery.attempts.map((a) => [a.status, a.fault])).toEqual([[202, 'rotated_secret']]);
    },
  );
});

describe('the API', () => {
  it('limits: of 100 TTS requests at once on one key, exactly 60 pass; Retry-After, honoured, passes', async () => {
    // A window of 10 s: the 100 requests land within it even on a loaded machine (with 2 s,
    // a burst spread past the window let more than 60 pass).
    const sbx = await sandbox({ flags: { 'rate-window-ms': '10000' } });
    const token = sbx.info.key.token;
    const answers = await Promise.all(
      Array.from({ length: 100 }, (_unused, i) =>
        sbx.call('POST', '/v1/tts', { text: `burst ${i}`, voice: 'alloy' }, token),
      ),
    );
    const ok = answers.filter((a) => a.status === 200);
    const limited = answers.filter((a) => a.status === 429);
    expect([ok.length, limited.length]).toEqual([60, 40]);
    for (const answer of limited) {
      expect(Number(answer.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(Number(answer.headers['retry-after'])).toBeLessThanOrEqual(10);
      expect(answer.body).toEqual({ detail: expect.stringMatching(/rate limit of 60 requests/) });
    }
    const wait = Math.max(...limited.map((a) => Number(a.headers['retry-after'])));
    await new Promise((resolve) => setTimeout(resolve, wait * 1000));
    const after = await sbx.call('POST', '/v1/tts', { text: 'after', voice: 'alloy' }, token);
    expect(after.status).toBe(200);
    const log = (await sbx.call('GET', '/sandbox/requests')).body as { status: number }[];
    expect(log.filter((r) => r.status === 200)).toHaveLength(61);
  });

  it('TTS is a real WAV, the same bytes for the same text and voice; voices and voice conversion answer', async () => {
    const sbx = await sandbox();
    const token = sbx.info.key.token;
    const one = await sbx.call('POST', '/v1/tts', { text: 'hello', voice: 'alloy' }, token);
    const two = await sbx.call('POST', '/v1/tts', { text: 'hello', voice: 'alloy' }, token);
    const other = await sbx.call('POST', '/v1/tts', { text: 'hello', voice: 'ember' }, token);
    expect(one.status).toBe(200);
    expect(one.headers['content-type']).toMatch(/^audio\/wav/);
    const wav = one.body as Buffer;
    expect(wav.subarray(0, 4).toString()).toBe('RIFF');
    expect(wav.subarray(8, 12).toString()).toBe('WAVE');
    expect(wav.readUInt32LE(40)).toBe(wav.length - 44);
    expect(wav.equals(two.body as Buffer)).toBe(true);
    expect(wav.equals(other.body as Buffer)).toBe(false);

    const voices = await sbx.call('GET', '/voices', undefined, token);
    expect(voices.body).toEqual({
      voices: expect.arrayContaining([{ id: 'alloy', name: 'Alloy' }]),
    });

    const batch = await sbx.call(
      'POST',
      '/v1/tts/batch',
      { items: [{ text: 'x', voice: 'alloy' }] },
      token,
    );
    expect(batch.status).toBe(202);
    const [delivery] = await deliveries(sbx);
    expect(delivery?.event).toBe('audio.ready');
    const [batchFolder] = readdirSync(join(sbx.dir, 'audio'));
    const converted = await sbx.call(
      'POST',
      '/v1/voice-convert',
      { audio_url: `${sbx.info.cdn}/audio/${batchFolder ?? ''}/0.wav`, voice: 'sage' },
      token,
    );
    expect(converted.status).toBe(200);
    expect((converted.body as Buffer).subarray(0, 4).toString()).toBe('RIFF');
    const elsewhere = await sbx.call(
      'POST',
      '/v1/voice-convert',
      { audio_url: 'https://example.com/a.wav', voice: 'sage' },
      token,
    );
    expect(elsewhere.status).toBe(400);
  });

  it('a voice the sandbox does not have (GET /voices) is 400 with a detail naming its voices, on each endpoint that takes one', async () => {
    const sbx = await sandbox();
    const token = sbx.info.key.token;
    const listed = (await sbx.call('GET', '/voices', undefined, token)).body as {
      voices: { id: string }[];
    };
    const ids = listed.voices.map((voice) => voice.id);
    expect(ids).toEqual(['alloy', 'ember', 'river', 'sage']);
    const refused = await Promise.all([
      sbx.call('POST', '/v1/tts', { text: 'hello', voice: 'nova' }, token),
      sbx.call('POST', '/v1/tts/batch', { items: [{ text: 'hello', voice: 'nova' }] }, token),
      sbx.call(
        'POST',
        '/v1/voice-convert',
        { audio_url: `${sbx.info.cdn}/audio/sample.wav`, voice: 'nova' },
        token,
      ),
    ]);
    for (const answer of refused) {
      expect(answer.status).toBe(400);
      const { detail } = answer.body as { detail: string };
      expect(detail).toContain('unknown voice "nova"');
      for (const id of ids) expect(detail).toContain(id);
    }
    // Nothing was rendered or sent for the refused batch.
    expect(await deliveries(sbx)).toEqual([]);
  });

  it('keys: missing, unknown and revoked are 401; a revocation is delivered as key.revoked', async () => {
    const port = await freePort();
    const sbx = await sandbox({
      flags: { 'time-scale': '0.001', 'webhook-url': `http://127.0.0.1:${port}/webhooks` },
    });
    const receiver = await receiverOn(port, { WEBHOOK_SECRETS: SECRET });
    expect((await sbx.call('GET', '/voices')).status).toBe(401);
    expect((await sbx.call('GET', '/voices', undefined, 'sk_nope')).status).toBe(401);
    const created = await sbx.call('POST', '/sandbox/keys');
    expect(created.status).toBe(201);
    const key = created.body as { id: string; token: string };
    expect((await sbx.call('GET', '/voices', undefined, key.token)).status).toBe(200);
    expect((await sbx.call('POST', `/sandbox/keys/${key.id}/revoke`)).status).toBe(200);
    const revoked = await sbx.call('GET', '/voices', undefined, key.token);
    expect(revoked).toMatchObject({
      status: 401,
      body: { detail: `API key ${key.id} was revoked` },
    });
    const delivery = await eventually(async () => {
      const found = (await deliveries(sbx)).find((d) => d.event === 'key.revoked');
      return found?.state === 'delivered' ? found : undefined;
    });
    expect(delivery.data_id).toBe(key.id);
    const [job] = await receiver.queue.getJobs(['waiting']);
    expect(JSON.parse(job?.data.body ?? '')).toEqual({
      event: 'key.revoked',
      data: { id: key.id },
    });
  });
});

/** A port of 127.0.0.1 held by this test until `close`. */
async function occupy(): Promise<{ port: number; close: () => Promise<void> }> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      }),
  };
}

it.each([
  ['API port', ['SANDBOX_PORT (--port)']],
  ['CDN port', ['SANDBOX_CDN_PORT (--cdn-port)']],
  ['API and CDN ports', ['SANDBOX_PORT (--port)', 'SANDBOX_CDN_PORT (--cdn-port)']],
])(
  'a sandbox with its %s taken exits 1 at once: one line naming each port taken by variable and flag, nothing else',
  async (_case, names) => {
    const held = await occupy();
    const ports = {
      port: names.includes('SANDBOX_PORT (--port)') ? held.port : await freePort(),
      cdnPort: names.includes('SANDBOX_CDN_PORT (--cdn-port)') ? held.port : await freePort(),
    };
    const prefix = `sandbox-test-${randomUUID()}`;
    // LOG_LEVEL left at its default: no log line may come before the refusal.
    const sbx = spawnSandbox(ports, {
      REDIS_URL: process.env.REDIS_URL ?? '',
      SANDBOX_PREFIX: prefix,
    });
    try {
      const [code] = await sbx.exited;
      expect({ code, stdout: sbx.stdout() }).toEqual({ code: 1, stdout: '' });
      const lines = sbx
        .stderr()
        .split('\n')
        .filter((line) => line !== '');
      expect(lines).toHaveLength(1);
      for (const name of names) {
        const port = name.startsWith('SANDBOX_PORT') ? ports.port : ports.cdnPort;
        expect(lines[0]).toContain(
          `${name} ${port} is already in use on SANDBOX_HOST (--host) 127.0.0.1`,
        );
      }
      expect(lines[0]).not.toMatch(/EADDRINUSE|Error:|\bat /);
    } finally {
      await sbx.kill();
      await held.close();
      await deleteKeys(redis, `${prefix}:*`);
    }
  },
);

it('a sandbox waiting for its Redis answers its API at once, 503 "starting", never leaving a request unanswered', async () => {
  // Nothing listens on this Redis port: the sandbox waits for it, then exits 1. Its API's port
  // is taken first; a request in between (the README's wait_for polling /healthz) must still get
  // an answer, not wait until the process ends.
  const ports = { port: await freePort(), cdnPort: await freePort() };
  const sbx = spawnSandbox(ports, { REDIS_URL: `redis://127.0.0.1:${await freePort()}` });
  try {
    const answer = await eventually(() =>
      request(`http://127.0.0.1:${ports.port}/healthz`).then(
        async (res) => ({
          status: res.statusCode,
          headers: res.headers,
          body: await res.body.json(),
        }),
        (error: unknown) => {
          // Not listening yet: asked again. Anything else (the connection closed unanswered)
          // fails the test.
          if ((error as NodeJS.ErrnoException).code === 'ECONNREFUSED') return undefined;
          throw error;
        },
      ),
    );
    expect(answer).toMatchObject({
      status: 503,
      headers: { 'retry-after': '1' },
      body: { detail: 'the sandbox is starting' },
    });
    expect(sbx.exitCode() ?? (await sbx.exited)[0]).toBe(1);
  } finally {
    await sbx.kill();
  }
});

it('a SIGTERM sent on reading "sandbox ready" stops it as asked: closed, exit 0', async () => {
  const ports = { port: await freePort(), cdnPort: await freePort() };
  const prefix = `sandbox-test-${randomUUID()}`;
  const sbx = spawnSandbox(
    ports,
    { REDIS_URL: process.env.REDIS_URL ?? '', SANDBOX_PREFIX: prefix },
    sigtermAtLine('sandbox ready'),
  );
  try {
    expect(await sbx.exited).toEqual([0, null]);
    expect(sbx.stderr()).toContain('sandbox ready');
  } finally {
    await sbx.kill();
    await deleteKeys(redis, `${prefix}:*`);
  }
});

/** `audio-webhooks sandbox` on `ports`, with `env` beside PATH and WEBHOOK_SECRETS; its output kept. */
function spawnSandbox(
  ports: { readonly port: number; readonly cdnPort: number },
  env: Record<string, string>,
  /** A `node --require` preload (sigtermAtLine). */
  preload?: string,
) {
  const dir = mkdtempSync(join(tmpdir(), 'aw-sandbox-'));
  const child = spawn(
    process.execPath,
    [
      ...(preload === undefined ? [] : ['--require', preload]),
      join(__dirname, '..', '..', 'bin', 'audio-webhooks.js'),
      'sandbox',
      '--port',
      String(ports.port),
      '--cdn-port',
      String(ports.cdnPort),
      '--dir',
      dir,
    ],
    {
      env: { PATH: process.env.PATH ?? '', WEBHOOK_SECRETS: SECRET, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const exited = once(child, 'exit') as Promise<[number | null]>;
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return {
    exited,
    exitCode: () => child.exitCode,
    stdout: () => stdout,
    stderr: () => stderr,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

it('pending deliveries survive a sandbox restart and are delivered after it', async () => {
  const port = await freePort();
  const flags = { 'time-scale': '0.01', 'webhook-url': `http://127.0.0.1:${port}/webhooks` };
  const first = await sandbox({ flags });
  // Nothing listens yet: the first attempt fails and a retry is scheduled (300 ms scaled).
  const sent = await first.call('POST', '/sandbox/events', {
    event: 'key.revoked',
    data: { id: 'key_later' },
  });
  const { id } = sent.body as { id: string };
  await eventually(async () => {
    const [found] = await deliveries(first, `?id=${id}`);
    return found !== undefined && found.attempts.length > 0 ? found : undefined;
  });
  expect(await first.stop()).toBe(0);

  await receiverOn(port, { WEBHOOK_SECRETS: SECRET });
  const second = await sandbox({ flags, dir: first.dir, prefix: first.prefix });
  expect(second.info.key).toEqual(first.info.key);
  const delivered = await eventually(async () => {
    const [found] = await deliveries(second, `?id=${id}`);
    return found?.state === 'delivered' ? found : undefined;
  });
  expect(delivered.attempts[0]).toMatchObject({ error: expect.stringMatching(/ECONNREFUSED/) });
  expect(delivered.attempts.at(-1)).toMatchObject({ status: 202 });
});
