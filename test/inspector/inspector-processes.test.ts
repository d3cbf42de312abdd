import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { eventually } from '../../src/util/eventually';
import {
  forwardSecret,
  startHttpEndpoint,
  type HttpEndpoint,
} from '../../harness/forward-destinations';
import { startLocalCdn, type LocalCdn } from '../../harness/local-cdn';
import { freePort } from '../../harness/private-redis';
import { downloadsFrom, serviceSettings, webOn } from '../helpers/service-settings';
import { spawnService, type ServiceProcess } from '../helpers/spawn-service';
import { deleteKeys, signed } from '../helpers/test-receiver';

/**
 * The timeline is whole whichever process wrote each step: two receivers (ROLE=web) and two
 * workers (ROLE=worker) as separate processes on one Redis; a re-send reaches the other receiver,
 * and a worker killed mid-attempt leaves that attempt in the timeline.
 */
const PASSWORD = 'inspector processes password';
const auth = `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}`;
const prefix = `test-${randomUUID()}`;
const redis = new Redis(process.env.REDIS_URL ?? '');

let cdn: LocalCdn;
let endpoint: HttpEndpoint;
const webs: { service: ServiceProcess; port: number }[] = [];
const workers: ServiceProcess[] = [];

beforeAll(async () => {
  cdn = await startLocalCdn();
  const secret = forwardSecret();
  endpoint = await startHttpEndpoint(secret);
  const caFile = join(mkdtempSync(join(tmpdir(), 'aw-ca-')), 'ca.pem');
  writeFileSync(caFile, cdn.ca);
  const common = serviceSettings({
    QUEUE_PREFIX: prefix,
    AUDIO_DIR: mkdtempSync(join(tmpdir(), 'aw-inspect-')),
  });
  for (let i = 0; i < 2; i++) {
    const port = await freePort();
    const service = spawnService({ ...common, ...webOn(port), ADMIN_PASSWORD: PASSWORD });
    webs.push({ service, port });
  }
  for (let i = 0; i < 2; i++) {
    workers.push(
      spawnService({
        ...common,
        ROLE: 'worker',
        ...downloadsFrom(cdn.origin),
        NODE_EXTRA_CA_CERTS: caFile,
        FORWARD_URLS: endpoint.url,
        FORWARD_SECRET: secret,
        // A dead worker's job is taken over within seconds, not 30.
        WORKER_LOCK_MS: '1500',
      }),
    );
  }
  await Promise.all([
    ...webs.map((w) => w.service.receiving()),
    ...workers.map((s) => s.waitForLog('audio-webhooks started')),
  ]);
}, 60_000);

afterAll(async () => {
  for (const service of [...webs.map((w) => w.service), ...workers]) {
    service.child.kill('SIGTERM');
    await service.exited;
  }
  await Promise.all([cdn.close(), endpoint.close()]);
  await deleteKeys(redis, `${prefix}:*`);
  redis.disconnect();
});

async function deliver(web: number, body: unknown): Promise<number> {
  const { raw, headers } = signed(body);
  const res = await fetch(`http://127.0.0.1:${webs[web]?.port ?? 0}/webhooks`, {
    method: 'POST',
    headers,
    body: raw,
    signal: AbortSignal.timeout(10_000),
  });
  return res.status;
}

interface Detail {
  state: string;
  duplicates: number;
  timeline: { step: string; detail: string }[];
}

/** A receiver's answer for the delivery, once `ready` holds (15 s at most, named on failure). */
async function detailFrom(web: number, id: string, ready: (d: Detail) => boolean, what: string) {
  const url = `http://127.0.0.1:${webs[web]?.port ?? 0}/admin/api/deliveries/audio.ready/${encodeURIComponent(id)}`;
  return await eventually(
    async () => {
      const res = await fetch(url, {
        headers: { authorization: auth },
        signal: AbortSignal.timeout(5_000),
      });
      if (res.status !== 200) return undefined;
      const body = (await res.json()) as Detail;
      return ready(body) ? body : undefined;
    },
    { timeoutMs: 15_000, everyMs: 100 },
  ).catch((error: unknown) => {
    throw new Error(`receiver ${web}: ${what} of ${id} not seen within 15 s`, { cause: error });
  });
}

const steps = (d: Detail) => d.timeline.map((s) => s.step);
const pids = () => workers.map((w) => w.child.pid);
const pidOf = (detail: string) => Number(/:(\d+)$/.exec(detail)?.[1]);

it('received by one receiver, re-sent to the other, handled by a worker: one whole timeline, read from either', async () => {
  const id = `processes-${randomUUID()}`;
  cdn.route(`/${id}.mp3`, (_req, res) => {
    res.writeHead(200, { 'content-type': 'audio/mpeg' }).end('ID3 two processes');
  });
  const delivery = sampleDelivery('audio.ready', {
    id,
    data: { audio_url: `${cdn.origin}/${id}.mp3` },
  });
  expect(await deliver(0, delivery)).toBe(202);
  expect(await deliver(1, delivery)).toBe(200);
  const whole = (d: Detail) => d.state === 'handled' && steps(d).includes('forwarded');
  const fromFirst = await detailFrom(0, id, whole, 'handled and forwarded');
  const fromSecond = await detailFrom(1, id, whole, 'handled and forwarded');
  expect(fromSecond).toEqual(fromFirst);
  expect(fromFirst.duplicates).toBe(1);
  expect(steps(fromFirst)).toEqual(
    expect.arrayContaining(['received', 'duplicate', 'attempt', 'stored', 'handled', 'forwarded']),
  );
  expect(steps(fromFirst)[0]).toBe('received');
  const attempt = fromFirst.timeline.find((s) => s.step === 'attempt');
  expect(pids()).toContain(pidOf(attempt?.detail ?? ''));
});

it('a worker SIGKILLed mid-attempt: the attempt it began is in the timeline, then the one that finished it', async () => {
  const id = `killed-${randomUUID()}`;
  let halfway: () => void = () => undefined;
  const halfSent = new Promise<void>((resolve) => (halfway = resolve));
  const bytes = Buffer.alloc(400_000, 7);
  cdn.route(`/${id}.mp3`, (_req, res, hit) => {
    res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': bytes.length });
    // Half the file, then silence: the first worker is certainly mid-attempt when it is killed.
    if (hit === 1)
      res.write(bytes.subarray(0, 200_000), () => {
        halfway();
      });
    else res.end(bytes);
  });
  expect(
    await deliver(
      1,
      sampleDelivery('audio.ready', { id, data: { audio_url: `${cdn.origin}/${id}.mp3` } }),
    ),
  ).toBe(202);
  await halfSent;
  const running = await detailFrom(0, id, (d) => steps(d).includes('attempt'), 'the attempt');
  expect(running.state).toBe('active');
  const killedPid = pidOf(running.timeline.find((s) => s.step === 'attempt')?.detail ?? '');
  const killed = workers.find((w) => w.child.pid === killedPid);
  expect(killed).toBeDefined();
  killed?.child.kill('SIGKILL');
  await killed?.exited;

  const done = await detailFrom(1, id, (d) => d.state === 'handled', 'handled after the kill');
  const attempts = done.timeline.filter((s) => s.step === 'attempt');
  expect(attempts.map((s) => pidOf(s.detail))).toEqual([
    killedPid,
    workers.find((w) => w !== killed)?.child.pid,
  ]);
  // Forwarded from the job (before `handled`) or by a forward job (after it).
  expect(steps(done).filter((step) => step !== 'forwarded')).toEqual([
    'received',
    'attempt',
    'attempt_failed',
    'attempt',
    'stored',
    'handled',
  ]);
  expect(done.timeline.find((s) => s.step === 'attempt_failed')?.detail).toMatch(
    /attempt 1 never ended: the worker running it stopped/,
  );
}, 60_000);
