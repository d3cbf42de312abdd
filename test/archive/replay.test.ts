import { execFile } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { request } from 'undici';
import { createArchive, hourFolder } from '../../src/archive/archive';
import { createLocalFileArea } from '../../src/storage/local/local-file-area';
import { archivedEntries } from '../../harness/archive-entries';
import { forwardSecret, startHttpEndpoint } from '../../harness/forward-destinations';
import { freePort } from '../../harness/private-redis';
import { hookCalls, recordingHooksBuild, runCliProcess } from '../helpers/replay-app';
import {
  deliveredBy,
  eventually,
  startSandboxProcess,
  type SandboxProcess,
} from '../../harness/sandbox-process';
import { accepted, postAsProvider } from '../helpers/provider-post';
import { serviceSettings } from '../helpers/service-settings';
import { spawnService, type ServiceProcess } from '../helpers/spawn-service';
import { signed } from '../helpers/test-receiver';

// Replay with real processes: the service (ROLE=all, with a fork's recording hooks), the
// operator CLI as its own process, real Redis, and the sandbox as the provider.
const SECRET = 'whsec_replay_test';
const REDIS_URL = process.env.REDIS_URL ?? '';
const BIN = join(__dirname, '..', '..', 'bin', 'audio-webhooks.js');
let sbx: SandboxProcess;
let port: number;
let build: { main: string; dir: string };
let redis: Redis;
const dirs: string[] = [];

// The fork's build is made once; each test gets its own sandbox (its deliveries, its own Redis
// keys) and port, so none sees what the one before sent. spawn-service.ts stops each test's
// service after it.
beforeAll(() => {
  build = recordingHooksBuild();
  dirs.push(build.dir);
  redis = new Redis(REDIS_URL);
});
beforeEach(async () => {
  port = await freePort();
  sbx = await startSandboxProcess({
    flags: { 'time-scale': '0.001', 'webhook-url': `http://127.0.0.1:${port}/webhooks` },
    env: { WEBHOOK_SECRETS: SECRET },
  });
});
afterEach(async () => {
  await sbx.stop();
});
afterAll(() => {
  redis.disconnect();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

interface App {
  readonly service: ServiceProcess;
  readonly audioDir: string;
  readonly hookLog: string;
  /** What the CLI needs to reach the same queue and store. */
  readonly cliEnv: Record<string, string>;
}

function newApp(settings: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'aw-replay-'));
  dirs.push(dir);
  const audioDir = join(dir, 'audio');
  const hookLog = join(dir, 'hooks.ndjson');
  const cliEnv = serviceSettings({ WEBHOOK_SECRETS: SECRET, AUDIO_DIR: audioDir, ...settings });
  return { audioDir, hookLog, cliEnv };
}

/** Starts the service of `app` (ROLE=all unless given) on the port the sandbox delivers to. */
async function start(
  app: ReturnType<typeof newApp>,
  env: Record<string, string> = {},
): Promise<App> {
  const service = spawnService(
    {
      ...app.cliEnv,
      ...deliveredBy(sbx, port),
      HOOK_LOG: app.hookLog,
      ...env,
    },
    { main: build.main },
  );
  if (env.ROLE === 'worker') await service.waitForLog('audio-webhooks started');
  else await service.receiving();
  return { ...app, service };
}

/** Every file under `dir`, relative to it, sorted. */
function tree(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((path) => statSync(join(dir, path)).isFile())
    .sort();
}

const archived = (app: { audioDir: string }) => archivedEntries(join(app.audioDir, '.archive'));

const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

async function ttsBatch(ids: readonly string[]): Promise<void> {
  const items = ids.map((id) => ({ id, text: `text of ${id}`, voice: 'alloy' }));
  const answer = await sbx.call('POST', '/v1/tts/batch', { items }, sbx.info.key.token);
  expect(answer.status).toBe(202);
}

/** Waits until the hooks were called `count` times in all (each call is one handled delivery). */
/** Waits for `count` hook calls; the bound grows with the count (a hang bound, not a timing). */
function hooksCalled(app: App, count: number) {
  return eventually(
    async () => {
      const calls = hookCalls(app.hookLog);
      return Promise.resolve(calls.length >= count ? calls : undefined);
    },
    { timeoutMs: Math.max(30_000, count * 30) },
  );
}

it('replay --id brings back a deleted item, byte-identical, and the hooks run again knowing it is a replay', async () => {
  const app = await start(newApp());
  const ids = ['one', 'two', 'three'].map((name) => `${name}-${randomUUID().slice(0, 8)}`);
  await ttsBatch(ids);
  await hooksCalled(app, 3);
  await eventually(() => Promise.resolve(archived(app).length === 3 ? true : undefined));
  const [, target = ''] = ids;
  const audioPath = join(app.audioDir, `${target}.wav`);
  const metadataPath = join(app.audioDir, `${target}.json`);
  const before = {
    sha: sha256(audioPath),
    metadata: JSON.parse(readFileSync(metadataPath, 'utf8')) as Record<string, unknown>,
  };
  unlinkSync(audioPath);
  unlinkSync(metadataPath);

  const replay = await runCliProcess(['replay', '--id', target], app.cliEnv);
  expect(replay).toMatchObject({ code: 0, stdout: '1 delivery put on the queue again\n' });

  const calls = await hooksCalled(app, 4);
  expect(sha256(audioPath)).toBe(before.sha);
  const after = JSON.parse(readFileSync(metadataPath, 'utf8')) as Record<string, unknown>;
  // The same item and bytes, received when it was; downloaded again by another job.
  for (const field of [
    'id',
    'event',
    'file',
    'bytes',
    'sha256',
    'audio_url',
    'received_at',
    'kind',
    'voice',
  ])
    expect(after[field]).toEqual(before.metadata[field]);
  expect(after.job_id).not.toBe(before.metadata.job_id);

  const forTarget = calls.filter((call) => call.id === target);
  expect(forTarget.map((call) => call.replay)).toEqual([false, true]);
  expect(forTarget[1]?.receivedAt).toBe(forTarget[0]?.receivedAt);
  expect(forTarget[1]?.jobId).not.toBe(forTarget[0]?.jobId);
  expect(calls.filter((call) => call.id !== target).every((call) => !call.replay)).toBe(true);
  // A replay is not archived again.
  expect(archived(app)).toHaveLength(3);
});

it('--since 10m --event audio.ready --dry-run --json lists exactly the archived items and changes nothing', async () => {
  const app = await start(newApp());
  const ids = [`dry-a-${randomUUID().slice(0, 8)}`, `dry-b-${randomUUID().slice(0, 8)}`];
  await ttsBatch(ids);
  const revoked = await sbx.call('POST', '/sandbox/events', {
    event: 'key.revoked',
    data: { id: `key_${randomUUID().slice(0, 8)}` },
  });
  expect(revoked.status).toBe(202);
  await hooksCalled(app, 3);
  await eventually(() => Promise.resolve(archived(app).length === 3 ? true : undefined));
  // Every job completed, not only its hook run and its archive entry written: a job still
  // finishing (its timeline's last step, BullMQ's completion) changes its keys after `before`.
  const completed = `${app.cliEnv.QUEUE_PREFIX}:deliveries:completed`;
  await eventually(async () => ((await redis.zcard(completed)) === 3 ? true : undefined));
  const entries = archived(app);
  // Each key, and whether it expires by itself (a BullMQ deduplication key lives seconds, which
  // a busy machine can outlast while the dry run reads).
  const keys = async () => {
    const names = (await redis.keys(`${app.cliEnv.QUEUE_PREFIX}:*`)).sort();
    const ttls = await Promise.all(names.map((name) => redis.pttl(name)));
    return new Map(names.map((name, i) => [name, (ttls[i] ?? -1) >= 0]));
  };
  const before = { files: tree(app.audioDir), keys: await keys() };

  const listed = await runCliProcess(
    ['replay', '--since', '10m', '--event', 'audio.ready', '--dry-run', '--json'],
    app.cliEnv,
  );
  expect(listed.code).toBe(0);
  expect(listed.stderr).toBe('');
  // In the order the store lists an hour: by item, not by time.
  const rows = (JSON.parse(listed.stdout) as Record<string, unknown>[]).sort((a, b) =>
    String(a.received_at).localeCompare(String(b.received_at)),
  );
  const expected = entries
    .filter((entry) => entry.event === 'audio.ready')
    .map((entry) => ({ event: entry.event, id: entry.id, received_at: entry.received_at }))
    .sort((a, b) => String(a.received_at).localeCompare(String(b.received_at)));
  expect(rows).toEqual(expected);
  expect(rows.map((row) => row.id).sort()).toEqual([...ids].sort());

  // Nothing queued, nothing written, no hook run: no key added, none gone but by its expiry.
  const after = await keys();
  expect(tree(app.audioDir)).toEqual(before.files);
  expect([...after.keys()].filter((name) => !before.keys.has(name))).toEqual([]);
  expect(
    [...before.keys]
      .filter(([name, expires]) => !after.has(name) && !expires)
      .map(([name]) => name),
  ).toEqual([]);
  expect(hookCalls(app.hookLog)).toHaveLength(3);
});

it('a replay keeps audio that is there; a re-delivery from the provider after it is still answered 200 duplicate; a second replay later runs again', async () => {
  const app = await start(newApp());
  const id = `dup-${randomUUID().slice(0, 8)}`;
  await ttsBatch([id]);
  await hooksCalled(app, 1);
  await eventually(() => Promise.resolve(archived(app).length === 1 ? true : undefined));
  const [delivery] = archived(app);

  const stored = statSync(join(app.audioDir, `${id}.wav`));
  expect((await runCliProcess(['replay', '--id', id], app.cliEnv)).code).toBe(0);
  await hooksCalled(app, 2);
  // The audio there whole is kept, not fetched and written again.
  const kept = statSync(join(app.audioDir, `${id}.wav`));
  expect([kept.ino, kept.mtimeMs]).toEqual([stored.ino, stored.mtimeMs]);

  const { raw, headers } = signed(delivery?.delivery, { secret: SECRET });
  const answer = await request(`http://127.0.0.1:${port}/webhooks`, {
    method: 'POST',
    headers,
    body: raw,
  });
  expect(answer.statusCode).toBe(200);
  expect(await answer.body.json()).toEqual({ received: true, duplicate: true });

  // Once the first replay is done, replaying again is a new replay, not a duplicate.
  const again = await runCliProcess(['replay', '--id', id], app.cliEnv);
  expect(again.stdout).toBe('1 delivery put on the queue again\n');
  const calls = await hooksCalled(app, 3);
  expect(calls.map((call) => call.replay)).toEqual([false, true, true]);
});

it('retention: the workers remove the hours older than ARCHIVE_RETENTION_HOURS and keep the rest', async () => {
  const app = newApp({ ARCHIVE_RETENTION_HOURS: '2' });
  const archive = createArchive(createLocalFileArea(join(app.audioDir, '.archive')));
  const hoursAgo = (hours: number) => new Date(Date.now() - hours * 3600_000).toISOString();
  const record = (id: string, receivedAt: string) =>
    archive.record({
      delivery: { event: 'audio.failed', data: { id } },
      jobId: randomUUID(),
      receivedAt,
    });
  const times = [hoursAgo(30), hoursAgo(3), hoursAgo(1 / 6)];
  const [old, older, recent] = times.map(hourFolder);
  await record('thirty-hours', times[0] ?? '');
  await record('three-hours', times[1] ?? '');
  await record('ten-minutes', times[2] ?? '');

  const worker = await start(app, { ROLE: 'worker' });
  const swept = await worker.service.waitForLog(
    'archive: removed the hours past ARCHIVE_RETENTION_HOURS',
  );
  expect(swept.removed).toEqual([old, older]);
  expect(archived(app).map((entry) => hourFolder(String(entry.received_at)))).toEqual([recent]);
  // The day folder the thirty-hour entry left empty is gone too (it is never today's).
  expect(readdirSync(join(app.audioDir, '.archive'))).not.toContain(old?.split('/')[0]);
});

it('ARCHIVE_RETENTION_HOURS=0 archives nothing, and replay --id says so (exit 1)', async () => {
  const app = await start(newApp({ ARCHIVE_RETENTION_HOURS: '0' }));
  const id = `off-${randomUUID().slice(0, 8)}`;
  await ttsBatch([id]);
  await hooksCalled(app, 1);
  await eventually(() =>
    Promise.resolve(existsSync(join(app.audioDir, `${id}.json`)) ? true : undefined),
  );
  expect(existsSync(join(app.audioDir, '.archive'))).toBe(false);
  const replay = await runCliProcess(['replay', '--id', id], app.cliEnv);
  expect(replay.code).toBe(1);
  expect(replay.stdout).toBe('');
  expect(replay.stderr).toBe(
    `audio-webhooks: nothing archived for id "${id}" (ARCHIVE_RETENTION_HOURS=0: the archive is off)\n`,
  );
});

it('an archive that cannot be written is logged and counted in /metrics, and the jobs are retried until their deliveries are archived (the soak found them completed and missing), each forwarded at once and once only', async () => {
  const secret = forwardSecret();
  const endpoint = await startHttpEndpoint(secret);
  const app = newApp({
    DOWNLOAD_BACKOFF_MS: '200',
    FORWARD_URLS: endpoint.url,
    FORWARD_SECRET: secret,
  });
  // A file where the archive's folder should be: every archive write fails (ENOTDIR).
  mkdirSync(app.audioDir, { recursive: true });
  writeFileSync(join(app.audioDir, '.archive'), 'in the way');
  const running = await start(app);
  const ids = ['x', 'y', 'z'].map((name) => `${name}-${randomUUID().slice(0, 8)}`);
  await deliverFailures(ids);
  // Handled, so forwarded, though not archived: the message does not wait for the archive.
  await endpoint.inbox.atLeast(ids.length);
  await running.service.until(
    () =>
      running.service.logs.filter((line) => String(line.msg).startsWith('archive write failed'))
        .length >= 6,
  );
  const metrics = await (await request(`http://127.0.0.1:${port}/metrics`)).body.text();
  expect(metrics).toMatch(/webhook_archive_writes_total\{result="failed"\} ([6-9]|\d\d)/);
  expect(metrics).toContain('webhook_archive_writes_total{result="archived"} 0');
  expect(metrics).toMatch(/webhook_queue_jobs\{state="completed"\} 0/);
  // The runs after the first, for the archive alone, sent nothing.
  const forwarded = ids.map((id) => `audio.failed:${id}`).sort();
  expect([...endpoint.inbox.ids()].sort()).toEqual(forwarded);
  // The disk is fixed: each delivery is archived (once read, however often written).
  unlinkSync(join(app.audioDir, '.archive'));
  await eventually(async () => {
    const text = await (await request(`http://127.0.0.1:${port}/metrics`)).body.text();
    return /webhook_queue_jobs\{state="completed"\} 3/.test(text) ? true : undefined;
  });
  const archivedIds = archived(app).map((entry) => entry.id);
  expect(new Set(archivedIds)).toEqual(new Set(ids));
  expect([...endpoint.inbox.ids()].sort()).toEqual(forwarded);
  await endpoint.close();
});

/** POSTs signed audio.failed deliveries straight to the service, a few at a time. */
async function deliverFailures(ids: readonly string[]): Promise<void> {
  let next = 0;
  const sendNext = async (): Promise<void> => {
    while (next < ids.length) {
      const id = ids[next++] ?? '';
      const { raw, headers } = signed(
        { event: 'audio.failed', data: { id, error: 'synthetic' } },
        { secret: SECRET },
      );
      const answer = await postAsProvider(async () => {
        const sent = await request(`http://127.0.0.1:${port}/webhooks`, {
          method: 'POST',
          headers,
          body: raw,
        });
        await sent.body.dump();
        return sent.statusCode;
      });
      expect(accepted(answer)).toBe(202);
    }
  };
  await Promise.all(Array.from({ length: 16 }, sendNext));
}

it('an entry a crashed worker left half-written is named on stderr and left out; the rest are replayed (exit 0)', async () => {
  const app = await start(newApp());
  const ids = ['p', 'q'].map((name) => `${name}-${randomUUID().slice(0, 8)}`);
  await deliverFailures(ids);
  await hooksCalled(app, 2);
  await eventually(() => Promise.resolve(archived(app).length === 2 ? true : undefined));
  // A segment of another worker, which stopped while appending its second line.
  const hour = hourFolder(new Date().toISOString());
  const segment = `${hour}~00/20261125T000000000Z-0badf00d.ndjson`;
  mkdirSync(join(app.audioDir, '.archive', hour, '~00'), { recursive: true });
  const whole = JSON.stringify({
    event: 'audio.failed',
    id: 'whole-line',
    received_at: new Date().toISOString(),
    job_id: randomUUID(),
    delivery: { event: 'audio.failed', data: { id: 'whole-line', error: 'synthetic' } },
  });
  writeFileSync(join(app.audioDir, '.archive', segment), `${whole}\n{"event":"audio.fai`);

  const listed = await runCliProcess(
    ['replay', '--since', '10m', '--dry-run', '--json'],
    app.cliEnv,
  );
  expect(listed.code).toBe(0);
  const rows = JSON.parse(listed.stdout) as { id: string }[];
  expect(rows.map((row) => row.id).sort()).toEqual([...ids, 'whole-line'].sort());
  expect(listed.stderr).toBe(
    `audio-webhooks: left out 1 archive entry that could not be read (first: ${segment}:2: an unfinished line (being appended as it was read, or its writer stopped then))\n`,
  );
});

it('a dry run beside live traffic: every delivery archived before it is listed once, the ones archived meanwhile once or not at all', async () => {
  const app = await start(newApp());
  const before = Array.from({ length: 300 }, (_unused, i) => `before-${i}`);
  await deliverFailures(before);
  await eventually(() => Promise.resolve(archived(app).length === 300 ? true : undefined));
  const during = Array.from({ length: 600 }, (_unused, i) => `during-${i}`);
  // The workers append to the hour's segments while the replay reads them.
  const [listed] = await Promise.all([
    runCliProcess(['replay', '--since', '10m', '--dry-run', '--json'], app.cliEnv),
    deliverFailures(during),
  ]);
  expect(listed.code).toBe(0);
  const ids = (JSON.parse(listed.stdout) as { id: string }[]).map((row) => row.id);
  expect(ids.length).toBe(new Set(ids).size);
  expect(before.every((id) => ids.includes(id))).toBe(true);
  expect(ids.every((id) => before.includes(id) || during.includes(id))).toBe(true);
  // A line met as it was being appended is named, never listed half.
  for (const line of listed.stderr.split('\n').filter((text) => text !== ''))
    expect(line).toMatch(
      /^audio-webhooks: left out \d+ archive entr(y|ies) that could not be read \(first: .*: an unfinished line/,
    );
  await hooksCalled(app, 900);
});

it('5,000 archived deliveries replayed by time range: each handled once, in bounded memory', async () => {
  const app = await start(newApp());
  const ids = Array.from({ length: 5000 }, (_unused, i) => `bulk-${i}`);
  await deliverFailures(ids);
  await hooksCalled(app, 5000);
  await eventually(() => Promise.resolve(archived(app).length === 5000 ? true : undefined), {
    timeoutMs: 60_000,
  });

  const replay = await runCliProcess(
    ['replay', '--since', '10m', '--event', 'audio.failed'],
    app.cliEnv,
  );
  expect(replay.code).toBe(0);
  expect(replay.stdout).toBe('5000 deliveries put on the queue again\n');
  // Not a terminal: plain progress lines, one per batch of 500.
  const lines = replay.stderr.trim().split('\n');
  expect(lines).toHaveLength(10);
  expect(lines.at(-1)).toMatch(
    /^replay: 5000 looked at, 5000 queued, 0 already queued \(hour [12] of [12]\)$/,
  );

  const calls = await eventually(
    () => {
      const replayed = hookCalls(app.hookLog).filter((call) => call.replay);
      return Promise.resolve(replayed.length >= 5000 ? replayed : undefined);
    },
    { timeoutMs: 90_000 },
  );
  const queue = `${app.cliEnv.QUEUE_PREFIX}:deliveries`;
  await eventually(async () =>
    (await redis.llen(`${queue}:active`)) + (await redis.zcard(`${queue}:prioritized`)) === 0
      ? true
      : undefined,
  );
  const replayed = hookCalls(app.hookLog).filter((call) => call.replay);
  expect(replayed).toHaveLength(5000);
  expect(new Set(replayed.map((call) => call.id))).toEqual(new Set(ids));
  expect(calls.length).toBe(5000);
  // The CLI holds a batch, the reads in flight and one hour's file names, never the whole range:
  // against the same command finding nothing, its peak grows by tens of MB, not by the range.
  const idle = await runCliProcess(
    ['replay', '--since', '10m', '--event', 'none.such', '--dry-run'],
    app.cliEnv,
  );
  const growthMb = (replay.maxRssBytes - idle.maxRssBytes) / 1048576;
  expect(growthMb).toBeLessThan(64);
}, 240_000);

it('two replays of the same range at once queue each delivery once; the workers then handle each once', async () => {
  const app = newApp();
  const ids = Array.from({ length: 300 }, (_unused, i) => `twice-${i}`);
  const first = await start(app);
  await deliverFailures(ids);
  await hooksCalled(first, 300);
  await eventually(() => Promise.resolve(archived(app).length === 300 ? true : undefined));
  first.service.child.kill('SIGTERM');
  await first.service.exited;

  // No worker runs: both replays' jobs wait, so the second finds every one of the first's.
  const args = ['replay', '--since', '10m'];
  const [a, b] = await Promise.all([
    runCliProcess(args, app.cliEnv),
    runCliProcess(args, app.cliEnv),
  ]);
  expect([a.code, b.code]).toEqual([0, 0]);
  const counts = [a, b].map((run) => {
    const [, queued = '0', already = '0'] =
      /^(\d+) deliver(?:y|ies) put on the queue again(?: \((\d+) more were already queued)?/.exec(
        run.stdout,
      ) ?? [];
    return { queued: Number(queued), already: Number(already) };
  });
  expect(counts[0]!.queued + counts[1]!.queued).toBe(300);
  expect(counts[0]!.already + counts[1]!.already).toBe(300);
  expect(await redis.zcard(`${app.cliEnv.QUEUE_PREFIX}:deliveries:prioritized`)).toBe(300);

  const worker = await start(app, { ROLE: 'worker' });
  await hooksCalled(worker, 600);
  await eventually(async () =>
    (await redis.zcard(`${app.cliEnv.QUEUE_PREFIX}:deliveries:prioritized`)) +
      (await redis.llen(`${app.cliEnv.QUEUE_PREFIX}:deliveries:active`)) ===
    0
      ? true
      : undefined,
  );
  const replayed = hookCalls(app.hookLog).filter((call) => call.replay);
  expect(replayed).toHaveLength(300);
  expect(new Set(replayed.map((call) => call.id)).size).toBe(300);

  // On a terminal (a pseudo-terminal from util-linux's `script`), a progress bar, not lines.
  const { stdout: onTerminal } = await promisify(execFile)(
    'script',
    ['-qfec', `'${process.execPath}' '${BIN}' replay --since 10m --yes`, '/dev/null'],
    { env: { PATH: process.env.PATH ?? '', TERM: 'xterm', ...app.cliEnv } },
  );
  expect(onTerminal).toMatch(
    /replay =+ hour ([12])\/\1 \| 300 read \| queued 300 \| already queued 0/,
  );
  expect(onTerminal).not.toContain('looked at');
  expect(onTerminal).toContain('300 deliveries put on the queue again');
}, 120_000);

it('bad flags and times are one line, exit 2; an unreachable Redis is one line, exit 1', async () => {
  const { cliEnv } = newApp();
  for (const args of [
    ['replay'],
    ['replay', '--since', 'yesterday'],
    ['replay', '--since', '2h', '--until', '3h'],
    ['replay', '--id', 'x', '--json'],
    ['replay', '--id', 'x', '--bogus'],
    ['replay', 'x'],
  ]) {
    const run = await runCliProcess(args, cliEnv);
    expect({ args, code: run.code, lines: run.stderr.trim().split('\n').length }).toEqual({
      args,
      code: 2,
      lines: 1,
    });
    expect(run.stdout).toBe('');
  }
  const away = await runCliProcess(['replay', '--id', 'x'], {
    ...cliEnv,
    REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
  });
  expect(away.code).toBe(1);
  expect(away.stderr).toMatch(
    /^audio-webhooks: cannot reach Redis at redis:\/\/127\.0\.0\.1:\d+: .*ECONNREFUSED.*\n$/,
  );
});
