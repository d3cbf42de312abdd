import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../../src/cli/main';
import { parseDestinations } from '../../src/forwarding/settings/destinations';
import { ROSTER_TTL_MS } from '../../src/forwarding/destination-roster';
import { TICK_MS } from '../../src/forwarding/destination-board';
import { createForwardQueue } from '../../src/forwarding/forward-queue';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { eventually } from '../../src/util/eventually';
import { createRabbitQueue } from '../../harness/broker-destinations';
import {
  forwardSecret,
  startHttpEndpoint,
  startThreeDestinations,
  type HttpEndpoint,
} from '../../harness/forward-destinations';
import { audio } from '../../harness/local-cdn';
import { deliverSigned, forwardTestBed } from '../helpers/forward-test-bed';
import { accepted, postAsProvider } from '../helpers/provider-post';
import { freePort } from '../../harness/private-redis';
import { startTestPipeline } from '../helpers/test-pipeline';
import { deleteKeys, TEST_SECRET } from '../helpers/test-receiver';

// Issue 37's tests: filters, Retry-After, a destination paused and drained, a shared rate.
const bed = forwardTestBed();
const { redis, cleanups, service, prefixed } = bed;

async function endpointWith(secret: string): Promise<HttpEndpoint> {
  const endpoint = await startHttpEndpoint(secret);
  cleanups.push(() => endpoint.close());
  return endpoint;
}

/** A FORWARD_CONFIG file of these destinations. */
function configFile(destinations: readonly Record<string, unknown>[]): string {
  const file = join(mkdtempSync(join(tmpdir(), 'aw-forward-')), 'forward.json');
  writeFileSync(file, JSON.stringify({ destinations }));
  return file;
}

/** Serves a distinct body at /<id>.mp3 on the local CDN. */
function ready(id: string, voice: string): Record<string, unknown> {
  bed.cdn.route(`/${id}.mp3`, audio(randomBytes(500 + id.length)));
  return sampleDelivery('audio.ready', { id, cdnOrigin: bed.cdn.origin, data: { voice } });
}

/** A receiver and two worker processes sharing one prefix and FORWARD_CONFIG. */
async function cluster(env: Record<string, string>) {
  const port = await freePort();
  const common = {
    QUEUE_PREFIX: prefixed(),
    AUDIO_DIR: mkdtempSync(join(tmpdir(), 'aw-audio-')),
    ...env,
  };
  const web = service({ ...common, ROLE: 'web', PORT: String(port) });
  const healthPorts = [await freePort(), await freePort()];
  const workers = healthPorts.map((health) =>
    service({ ...common, ROLE: 'worker', WORKER_HEALTH_PORT: String(health) }),
  );
  await Promise.all([
    web.receiving(),
    ...workers.map((s) => s.waitForLog('audio-webhooks started')),
  ]);
  /** Resolves once both workers have read `name` as paused (their /metrics say so). */
  const workersSeePaused = (name: string) =>
    Promise.all(
      healthPorts.map((health) =>
        seesPaused(name, async () => {
          const response = await fetch(`http://127.0.0.1:${String(health)}/metrics`);
          return response.text();
        }),
      ),
    );
  return { port, workers, workersSeePaused, prefix: common.QUEUE_PREFIX, cli: operatorCli(common) };
}

/**
 * Resolves once a worker's metrics say it holds `name` paused: a worker reads the destinations'
 * states within a tick (TICK_MS), and its gauge shows what it read.
 */
async function seesPaused(name: string, metrics: () => Promise<string>): Promise<void> {
  const paused = `webhook_forward_destination_paused{destination="${name}"} 1`;
  await eventually(async () => ((await metrics()).includes(paused) ? true : undefined), {
    timeoutMs: 10 * TICK_MS,
  });
}

/** The most requests that arrived within any `windowMs` (each window starting at an arrival). */
function busiestWindow(arrivals: readonly number[], windowMs: number): number {
  const sorted = [...arrivals].sort((a, b) => a - b);
  let most = 0;
  let first = 0;
  for (let last = 0; last < sorted.length; last += 1) {
    while ((sorted[last] ?? 0) - (sorted[first] ?? 0) >= windowMs) first += 1;
    most = Math.max(most, last - first + 1);
  }
  return most;
}

describe('filters', () => {
  const VOICES = ['nova', 'alloy', 'echo', 'onyx'];
  const FILTERS = {
    ready: { type: 'audio.ready' },
    voices: { data: { voice: { $in: ['nova', 'alloy'] } } },
    vip: { $or: [{ type: 'key.revoked' }, { data: { id: { $startsWith: 'vip-' } } }] },
  };

  it('three destinations with different filters, 1,000 mixed deliveries: each gets exactly its matches, a message none wants makes no job, and `forward test-filter` over the archive counts the same', async () => {
    const secret = forwardSecret();
    const endpoints = {
      ready: await endpointWith(secret),
      voices: await endpointWith(secret),
      vip: await endpointWith(secret),
    };
    const pipeline = await startTestPipeline(
      { CDN_URL: bed.cdn.origin, DOWNLOAD_ALLOW_PRIVATE_IPS: 'true' },
      bed.cdn.ca,
      {
        FORWARD_SECRET: secret,
        FORWARD_CONFIG: configFile(
          Object.entries(FILTERS).map(([name, filter]) => ({
            url: endpoints[name as keyof typeof FILTERS].url,
            name,
            filter,
          })),
        ),
      },
    );
    cleanups.push(async () => {
      await pipeline.close();
      await deleteKeys(redis, `${pipeline.receiver.config.queuePrefix}:*`);
    });
    const bodies = Array.from({ length: 1000 }, (_, i) => {
      const id = `${i % 7 === 0 ? 'vip-' : ''}${randomUUID()}`;
      const voice = VOICES[i % VOICES.length] ?? 'nova';
      const kind = i % 5;
      if (kind < 2) return ready(id, voice);
      if (kind === 2) return sampleDelivery('audio.failed', { id, data: { voice } });
      if (kind === 3) return sampleDelivery('key.revoked', { id });
      return sampleDelivery('audio.failed', { id, data: { voice: 'echo' } });
    });
    const wanted = (body: Record<string, unknown>) => {
      const data = body.data as { id: string; voice?: string };
      return {
        ready: body.event === 'audio.ready',
        voices: data.voice === 'nova' || data.voice === 'alloy',
        vip: body.event === 'key.revoked' || data.id.startsWith('vip-'),
      };
    };
    for (const body of bodies) {
      const answer = await postAsProvider(async () => (await pipeline.post(body)).status);
      expect(accepted(answer)).toBe(202);
    }
    for (const body of bodies) await pipeline.settled((body.data as { id: string }).id);

    const expected = { ready: [] as string[], voices: [] as string[], vip: [] as string[] };
    let none = 0;
    for (const body of bodies) {
      const wants = wanted(body);
      const messageId = `${String(body.event)}:${(body.data as { id: string }).id}`;
      for (const name of Object.keys(expected) as (keyof typeof expected)[])
        if (wants[name]) expected[name].push(messageId);
      if (!Object.values(wants).some(Boolean)) none += 1;
    }
    expect(none).toBeGreaterThan(50);
    for (const name of Object.keys(expected) as (keyof typeof expected)[]) {
      await endpoints[name].inbox.holding(expected[name]);
      expect([...new Set(endpoints[name].inbox.ids())].sort()).toEqual(expected[name].sort());
    }
    const forwards = createForwardQueue(redis, pipeline.receiver.config.queuePrefix);
    cleanups.push(() => forwards.close());
    // A message is sent from its delivery job; one goes on the forward queue only for a
    // destination that did not answer within the bound of that attempt (a loaded machine), and
    // a message that matched nothing never makes a forward job.
    const wantedBy = new Map<string, Set<string>>();
    for (const [name, ids] of Object.entries(expected))
      for (const messageId of ids)
        wantedBy.set(messageId, (wantedBy.get(messageId) ?? new Set()).add(name));
    for (const job of await forwards.getJobs([], 0, -1)) {
      const names = wantedBy.get(job.data.messageId);
      expect({ messageId: job.data.messageId, wanted: names !== undefined }).toEqual({
        messageId: job.data.messageId,
        wanted: true,
      });
      for (const name of job.data.destinations) expect([...(names ?? [])]).toContain(name);
    }

    // The same filters over the archive of those 1,000 deliveries.
    for (const [name, filter] of Object.entries(FILTERS)) {
      const { code, stdout } = await pipeline.cli(
        'forward',
        'test-filter',
        JSON.stringify(filter),
        '--json',
      );
      expect(code).toBe(0);
      const answer = JSON.parse(stdout) as { read: number; matched: number };
      expect(answer.read).toBe(bodies.length);
      expect(answer.matched).toBe(expected[name as keyof typeof expected].length);
    }
    // A hang bound, not a timing: 1,000 deliveries, each settled, on a machine that may be busy.
  }, 240_000);
});

describe('Retry-After', () => {
  it.each([
    ['429 with Retry-After: 3', 429, () => '3', 3000],
    [
      '503 with an HTTP date 3 s ahead',
      503,
      () => new Date(Math.ceil(Date.now() / 1000) * 1000 + 3000).toUTCString(),
      2000,
    ],
  ])(
    '%s: the next attempt comes no sooner, though FORWARD_BACKOFF_MS is 50',
    async (_what, status, header, atLeastMs) => {
      const secret = forwardSecret();
      const endpoint = await endpointWith(secret);
      let asked: number | undefined;
      endpoint.refuse = () => {
        if (asked !== undefined) return undefined;
        const value = header();
        // An HTTP date says a second; it is kept to the second.
        asked = /^\d+$/.test(value) ? Date.now() + Number(value) * 1000 : Date.parse(value);
        return { status, headers: { 'retry-after': value } };
      };
      const pipeline = await startTestPipeline({}, undefined, {
        FORWARD_URLS: endpoint.url,
        FORWARD_SECRET: secret,
        FORWARD_BACKOFF_MS: '50',
      });
      cleanups.push(async () => {
        await pipeline.close();
        await deleteKeys(redis, `${pipeline.receiver.config.queuePrefix}:*`);
      });
      await pipeline.post(sampleDelivery('key.revoked')).expect(202);
      await endpoint.inbox.atLeast(1);
      const [first, second] = endpoint.arrivals;
      expect(endpoint.arrivals).toHaveLength(2);
      expect((second ?? 0) - (first ?? 0)).toBeGreaterThanOrEqual(atLeastMs);
      expect(second ?? 0).toBeGreaterThanOrEqual((asked ?? Infinity) - 5);
    },
    30_000,
  );
});

describe('backoff per destination', () => {
  it('a destination that failed waits its own backoff, though a paused one makes the job run at once', async () => {
    const secret = forwardSecret();
    const failing = await endpointWith(secret);
    failing.failing = true;
    const held = await endpointWith(secret);
    const pipeline = await startTestPipeline({}, undefined, {
      FORWARD_SECRET: secret,
      FORWARD_CONFIG: configFile([
        { url: failing.url, name: 'failing' },
        { url: held.url, name: 'held' },
      ]),
      FORWARD_BACKOFF_MS: '2000',
    });
    cleanups.push(async () => {
      await pipeline.close();
      await deleteKeys(redis, `${pipeline.receiver.config.queuePrefix}:*`);
    });
    expect((await pipeline.cli('forward', 'pause', 'held')).code).toBe(0);
    await seesPaused('held', () => pipeline.workers.registry.metrics());
    await pipeline.post(sampleDelivery('key.revoked')).expect(202);
    // The delivery job's send fails; `held` was not tried, so its forward job is due at once.
    await eventually(async () => Promise.resolve(failing.arrivals.length >= 2 ? true : undefined));
    const [first, second] = failing.arrivals;
    // Equal jitter: the first retry comes after half of FORWARD_BACKOFF_MS at the least.
    expect((second ?? 0) - (first ?? 0)).toBeGreaterThanOrEqual(1000);
    expect(held.requests).toBe(0);
  }, 30_000);
});

describe('per destination, across two worker processes', () => {
  it('a rate of 20/s shared by two workers: over 10 s no second holds more than 20 sends', async () => {
    const secret = forwardSecret();
    const endpoint = await endpointWith(secret);
    const { port } = await cluster({
      FORWARD_SECRET: secret,
      FORWARD_CONFIG: configFile([{ url: endpoint.url, name: 'limited', rate_per_second: 20 }]),
    });
    const ids = Array.from({ length: 250 }, () => `rate-${randomUUID()}`);
    for (const id of ids)
      expect(await deliverSigned(port, sampleDelivery('key.revoked', { id }))).toBe(202);
    // The scenario is 10 s of sending, counted from the first send.
    await endpoint.inbox.atLeast(1);
    const started = endpoint.arrivals[0] ?? Date.now();
    await endpoint.inbox.holding(
      ids.map((id) => `key.revoked:${id}`),
      60_000,
    );
    const within = endpoint.arrivals.filter((at) => at - started < 10_000);
    expect(busiestWindow(within, 1000)).toBeLessThanOrEqual(20);
    // The limit spreads the sends rather than dropping them: each one arrives.
    expect(new Set(endpoint.inbox.ids())).toEqual(new Set(ids.map((id) => `key.revoked:${id}`)));
  }, 90_000);

  it('a destination down for 20 s under load: paused within its threshold, one probe at a time, the others not held behind it, and every held message arrives once it is back', async () => {
    const secret = forwardSecret();
    const [down, steady] = [await endpointWith(secret), await endpointWith(secret)];
    const rabbit = await createRabbitQueue();
    cleanups.push(() => rabbit.close());
    const pauseAfter = 10;
    const probeSeconds = 2;
    const { port, cli } = await cluster({
      FORWARD_SECRET: secret,
      FORWARD_PAUSE_AFTER: String(pauseAfter),
      FORWARD_PROBE_SECONDS: String(probeSeconds),
      FORWARD_BACKOFF_MS: '200',
      FORWARD_CONFIG: configFile([
        { url: down.url, name: 'down' },
        { url: steady.url, name: 'steady' },
        { url: rabbit.url, name: 'rabbit' },
      ]),
    });
    const sentAt = new Map<string, number>();
    /** Posts `perSecond` deliveries a second for `seconds`; ids in order. */
    const load = async (seconds: number, perSecond: number) => {
      const ids: string[] = [];
      for (let tick = 0; tick < seconds * 10; tick += 1) {
        const next = Date.now() + 100;
        for (let i = 0; i < perSecond / 10; i += 1) {
          const id = `outage-${randomUUID()}`;
          sentAt.set(`key.revoked:${id}`, Date.now());
          expect(await deliverSigned(port, sampleDelivery('key.revoked', { id }))).toBe(202);
          ids.push(id);
        }
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - Date.now())));
      }
      return ids;
    };
    const calm = await load(5, 20);
    const outageFrom = Date.now();
    down.failing = true;
    const during = await load(20, 20);
    const outageTo = Date.now();
    down.failing = false;
    const all = [...calm, ...during].map((id) => `key.revoked:${id}`);

    // Every held message arrives once it is back; none lost (repeats allowed: at least once).
    for (const inbox of [down.inbox, steady.inbox, rabbit.inbox]) await inbox.holding(all);
    for (const inbox of [down.inbox, steady.inbox, rabbit.inbox])
      expect(new Set(inbox.ids())).toEqual(new Set(all));

    // Paused within its threshold: requests to it during the outage, before and after the pause.
    const failed = down.arrivals.filter((at) => at >= outageFrom && at < outageTo);
    // The other process reads the pause within a tick (a second), or at its next failure.
    const pausedAt = (failed[pauseAfter - 1] ?? outageFrom) + 2000;
    const beforePause = failed.filter((at) => at < pausedAt);
    // Each worker process may have a send in flight per forward it runs when the pause lands.
    expect(beforePause.length).toBeLessThan(pauseAfter + 2 * 32);
    // Then one probe every FORWARD_PROBE_SECONDS at the most (one tick of slack per process).
    const probes = failed.filter((at) => at >= pausedAt);
    expect(probes.length).toBeLessThanOrEqual(
      Math.ceil((outageTo - pausedAt) / (probeSeconds * 1000)) + 2,
    );
    expect(busiestWindow(probes, probeSeconds * 1000 - 200)).toBeLessThanOrEqual(1);

    // The others were not held behind it: most of what was sent during the outage reached
    // `steady` before the outage ended (held behind `down`, none would have).
    const reachedDuring = steady.inbox.messages.filter(
      (m, index) =>
        (sentAt.get(m.id) ?? 0) >= outageFrom && (steady.arrivals[index] ?? Infinity) < outageTo,
    );
    expect(reachedDuring.length).toBeGreaterThan(during.length / 2);

    // `forward status` shows it active again, nothing waiting.
    const status = await eventually(async () => {
      const { stdout } = await cli('forward', 'status', '--json');
      const rows = JSON.parse(stdout) as { name: string; state: string; waiting: number }[];
      return rows.every((row) => row.state === 'active' && row.waiting === 0) ? rows : undefined;
    });
    expect(status.map((row) => row.name)).toEqual(['down', 'steady', 'rabbit']);
  }, 180_000);

  it('`forward pause` holds a destination for both workers until `forward resume`; status shows what waits', async () => {
    const secret = forwardSecret();
    const endpoint = await endpointWith(secret);
    const { port, cli, workersSeePaused } = await cluster({
      FORWARD_SECRET: secret,
      FORWARD_CONFIG: configFile([{ url: endpoint.url, name: 'held' }]),
    });
    expect(await cli('forward', 'pause', 'held')).toEqual({
      code: 0,
      stdout: 'held: now paused\n',
    });
    await workersSeePaused('held');
    const ids = Array.from({ length: 30 }, () => `held-${randomUUID()}`);
    for (const id of ids)
      expect(await deliverSigned(port, sampleDelivery('key.revoked', { id }))).toBe(202);
    const status = await eventually(async () => {
      const { stdout } = await cli('forward', 'status', '--json');
      const [row] = JSON.parse(stdout) as Record<string, unknown>[];
      return row?.held === ids.length ? row : undefined;
    });
    expect(status).toMatchObject({
      state: 'paused',
      paused_by: 'operator',
      paused_since: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) as unknown,
      waiting: ids.length,
      held: ids.length,
    });
    expect(endpoint.requests).toBe(0);
    expect(await cli('forward', 'resume', 'held')).toEqual({
      code: 0,
      stdout: 'held: now active\n',
    });
    await endpoint.inbox.holding(ids.map((id) => `key.revoked:${id}`));
    expect(new Set(endpoint.inbox.ids())).toEqual(new Set(ids.map((id) => `key.revoked:${id}`)));
    const { code, stdout } = await cli('forward', 'resume', 'nobody');
    expect({ code, stdout }).toEqual({ code: 2, stdout: '' });
  }, 60_000);
});

describe('the destinations the workers forward to', () => {
  it('`forward status --json` in a shell without FORWARD_URLS lists the workers’ three destinations (name, kind, never a credential), and `forward pause` finds them', async () => {
    const three = await startThreeDestinations();
    cleanups.push(() => three.close());
    const prefix = prefixed();
    const common = { WEBHOOK_SECRETS: TEST_SECRET, QUEUE_PREFIX: prefix };
    const worker = service({
      ...common,
      ...three.env,
      ROLE: 'worker',
      AUDIO_DIR: mkdtempSync(join(tmpdir(), 'aw-audio-')),
    });
    await worker.waitForLog('audio-webhooks started');
    // The operator's shell: the same Redis and prefix, no FORWARD_URLS, no FORWARD_CONFIG.
    const cli = operatorCli(common);
    const parsed = parseDestinations(three.env.FORWARD_URLS);
    if ('problem' in parsed) throw new Error(parsed.problem);
    const expected = parsed.destinations.map(({ name, kind }) => ({ name, kind }));
    const rows = await eventually(async () => {
      const { code, stdout } = await cli('forward', 'status', '--json');
      expect(code).toBe(0);
      expect(stdout).not.toMatch(/guest|exchange=|aw-test/);
      const listed = JSON.parse(stdout) as { name: string; kind: string; state: string }[];
      return listed.length === expected.length ? listed : undefined;
    });
    expect(rows.map(({ name, kind }) => ({ name, kind }))).toEqual(
      expect.arrayContaining(expected),
    );
    expect(rows.every((row) => row.state === 'active')).toBe(true);
    // Listed for a while only: a destination no worker names any more leaves the list.
    const ttl = await redis.pttl(`${prefix}:forward:roster`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(ROSTER_TTL_MS);

    const amqp = expected.find(({ kind }) => kind === 'amqp')?.name ?? '';
    expect(await cli('forward', 'pause', amqp)).toEqual({
      code: 0,
      stdout: `${amqp}: now paused\n`,
    });
    const { stdout } = await cli('forward', 'status', '--json');
    const paused = (JSON.parse(stdout) as { name: string; state: string }[]).find(
      (row) => row.name === amqp,
    );
    expect(paused?.state).toBe('paused');
  }, 60_000);
});

/** The operator's CLI in this process, on the test Redis with `env`: its exit code and stdout. */
function operatorCli(env: Record<string, string>) {
  return async (...args: string[]) => {
    let stdout = '';
    const code = await runCli(
      args,
      { REDIS_URL: process.env.REDIS_URL ?? '', ...env },
      { out: (t) => (stdout += t) },
      { out: () => undefined },
    );
    return { code, stdout };
  };
}

describe('destination names every object inherits', () => {
  it('destinations named constructor and toString are retried, sent to and shown as sent like any other', async () => {
    const secret = forwardSecret();
    const [constructor, toString] = [await endpointWith(secret), await endpointWith(secret)];
    // Each refuses its first try, so its message goes on in a forward job of its own.
    constructor.failNext = 1;
    toString.failNext = 1;
    const pipeline = await startTestPipeline({}, undefined, {
      FORWARD_SECRET: secret,
      FORWARD_CONFIG: configFile([
        { url: constructor.url, name: 'constructor' },
        { url: toString.url, name: 'toString' },
      ]),
      FORWARD_BACKOFF_MS: '50',
    });
    cleanups.push(async () => {
      await pipeline.close();
      await deleteKeys(redis, `${pipeline.receiver.config.queuePrefix}:*`);
    });
    const id = `inherited-${randomUUID()}`;
    await pipeline.post(sampleDelivery('key.revoked', { id })).expect(202);
    await constructor.inbox.atLeast(1);
    await toString.inbox.atLeast(1);
    const forwards = await eventually(async () => {
      const { stdout } = await pipeline.cli('inspect', id, '--json');
      const shown = (JSON.parse(stdout) as { forwards: { destination: string; state: string }[] })
        .forwards;
      return shown.every((forward) => forward.state === 'sent') ? shown : undefined;
    });
    expect(forwards.map((forward) => forward.destination).sort()).toEqual([
      'constructor',
      'toString',
    ]);
  }, 30_000);
});
