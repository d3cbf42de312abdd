import { execFile } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../harness/private-redis';
import {
  deliveredBy,
  eventually,
  startSandboxProcess,
  type SandboxProcess,
} from '../../harness/sandbox-process';
import { serviceSettings } from '../helpers/service-settings';
import { spawnService, type ServiceProcess } from '../helpers/spawn-service';
import { copyOfRepository } from '../helpers/repository-copy';

// A fork's own event, built and run as a fork would: in a copy of the repository whose only
// change is under src/custom/, compiled with the project's own build, driven by the sandbox.
const run = promisify(execFile);
const root = join(__dirname, '..', '..');
const SECRET = 'whsec_fork_test';

async function build(dir: string): Promise<void> {
  await run(
    process.execPath,
    [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
    {
      cwd: dir,
    },
  );
}

let sbx: SandboxProcess;
let port: number;
const dirs: string[] = [];
const services: ServiceProcess[] = [];

beforeAll(async () => {
  port = await freePort();
  sbx = await startSandboxProcess({
    flags: { 'time-scale': '0.001', 'webhook-url': `http://127.0.0.1:${port}/webhooks` },
    env: { WEBHOOK_SECRETS: SECRET },
  });
});
afterEach(async () => {
  for (const service of services.splice(0)) {
    service.child.kill('SIGTERM');
    await service.exited;
  }
});
afterAll(async () => {
  await sbx.stop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function startFork(
  dir: string,
  audioDir: string,
  command?: readonly [string, ...string[]],
): ServiceProcess {
  const service = spawnService(
    serviceSettings({ WEBHOOK_SECRETS: SECRET, ...deliveredBy(sbx, port), AUDIO_DIR: audioDir }),
    command === undefined ? { main: join(dir, 'dist', 'main.js') } : { cwd: dir, command },
  );
  services.push(service);
  return service;
}

/** A WAV the sandbox rendered, served by its CDN: what a provider's `audio_url` points at. */
async function renderedAudio(): Promise<{ url: string; bytes: Buffer }> {
  const before = new Set(readdirSync(join(sbx.dir, 'audio'), { withFileTypes: false }).map(String));
  const batch = await sbx.call(
    'POST',
    '/v1/tts/batch',
    { items: [{ text: 'fork', voice: 'alloy' }] },
    sbx.info.key.token,
  );
  expect(batch.status).toBe(202);
  const folder = await eventually(() =>
    Promise.resolve(readdirSync(join(sbx.dir, 'audio')).find((name) => !before.has(name))),
  );
  return {
    url: `${sbx.info.cdn}/audio/${folder}/0.wav`,
    bytes: readFileSync(join(sbx.dir, 'audio', folder, '0.wav')),
  };
}

interface SandboxDelivery {
  readonly state: string;
  readonly attempts: readonly { readonly status?: number }[];
}

async function deliveries(id: string): Promise<SandboxDelivery[]> {
  return (await sbx.call('GET', `/sandbox/deliveries?id=${id}`)).body as SandboxDelivery[];
}

/** The receiver's status on the delivery's first attempt, once there is one. */
async function firstAnswer(id: string): Promise<number | undefined> {
  const attempt = await eventually(async () => (await deliveries(id))[0]?.attempts[0]);
  return attempt.status;
}

it('a fork adds voice.converted by copying the example into src/custom/ alone and runs npm start as the README does: the sandbox delivers it, the worker downloads its audio', async () => {
  const dir = copyOfRepository();
  dirs.push(dir);
  // Built once before, as a clone that ran the service already: npm start must not serve that.
  await build(dir);
  mkdirSync(join(dir, 'src', 'custom'));
  cpSync(join(dir, 'src', 'examples', 'events.ts'), join(dir, 'src', 'custom', 'events.ts'));
  const audioDir = join(dir, 'data', 'audio');
  const service = startFork(dir, audioDir, ['npm', 'start']);
  const started = await service.waitForLog('audio-webhooks started');
  expect(started.custom).toEqual({ events: ['voice.converted'], hooks: [], store: false });
  const audio = await renderedAudio();

  const id = `vc-${randomUUID()}`;
  const sent = await sbx.call('POST', '/sandbox/events', {
    event: 'voice.converted',
    data: { id, audio_url: audio.url, voice: 'sage' },
    faults: ['duplicate'],
  });
  expect(sent.status).toBe(202);
  const stored = await service.waitForLog('converted voice stored');
  expect(stored).toMatchObject({ id, event: 'voice.converted', voice: 'sage', file: `${id}.wav` });
  const file = readFileSync(join(audioDir, `${id}.wav`));
  expect(file.equals(audio.bytes)).toBe(true);
  const metadata = JSON.parse(readFileSync(join(audioDir, `${id}.json`), 'utf8')) as Record<
    string,
    unknown
  >;
  expect(metadata).toMatchObject({
    id,
    event: 'voice.converted',
    voice: 'sage',
    audio_url: audio.url,
    bytes: file.length,
    sha256: createHash('sha256').update(file).digest('hex'),
  });
  // The duplicate fault sent the same delivery twice at once: one was accepted, one answered
  // duplicate, and the handler ran once.
  const [delivery] = await deliveries((sent.body as { id: string }).id);
  expect(delivery?.state).toBe('delivered');
  const runs = service.logs.filter(
    (line) => line.msg === 'converted voice stored' && line.id === id,
  );
  expect(runs).toHaveLength(1);

  // Data that fails the fork's schema is refused with the problem named, and never retried into.
  const bad = await sbx.call('POST', '/sandbox/events', {
    event: 'voice.converted',
    data: { id: `vc-${randomUUID()}`, audio_url: audio.url },
  });
  expect(await firstAnswer((bad.body as { id: string }).id)).toBe(400);

  // The signal npm gets ends the service it started: nothing is left holding the port.
  service.child.kill('SIGTERM');
  expect(await service.exited).toBe(0);
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '0.0.0.0', resolve);
  });
  await new Promise((resolve) => server.close(resolve));
}, 240_000);

it('with no src/custom/ at all the service builds and runs as shipped; a custom event is then ignored (200)', async () => {
  const dir = copyOfRepository();
  dirs.push(dir);
  await build(dir);
  const service = startFork(dir, join(dir, 'data', 'audio'));
  await service.waitForLog('audio-webhooks started');
  const sent = await sbx.call('POST', '/sandbox/events', {
    event: 'voice.converted',
    data: { id: `vc-${randomUUID()}`, audio_url: `${sbx.info.cdn}/audio/x/0.wav`, voice: 'sage' },
  });
  const ignored = await service.waitForLog('ignored unknown event');
  expect(ignored).toMatchObject({ event: 'voice.converted' });
  expect(await firstAnswer((sent.body as { id: string }).id)).toBe(200);
}, 240_000);

it('a custom event named like a built-in one stops the start with one line', async () => {
  const dir = copyOfRepository();
  dirs.push(dir);
  mkdirSync(join(dir, 'src', 'custom'));
  writeFileSync(
    join(dir, 'src', 'custom', 'events.ts'),
    [
      "import { z } from 'zod';",
      "import { defineEvent } from '../index.js';",
      'export const events = [',
      "  defineEvent({ name: 'audio.ready', data: z.object({ id: z.string() }), handle: () => Promise.resolve() }),",
      '];',
      '',
    ].join('\n'),
  );
  await build(dir);
  const service = startFork(dir, join(dir, 'data', 'audio'));
  expect(await service.exited).toBe(1);
  expect(service.stderr()).toBe(
    'audio-webhooks: src/custom/events.ts: event "audio.ready" is built in; use a hook in src/custom/hooks.ts to react to it\n',
  );
}, 240_000);
