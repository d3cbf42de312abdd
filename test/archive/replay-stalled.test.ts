import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { createArchive, type ArchivedDelivery } from '../../src/archive/archive';
import { replayDeliveries, ReplayStalledError } from '../../src/archive/replay';
import {
  replayQuery,
  resumeCommand,
  runReplay,
  type ReplayArgs,
} from '../../src/cli/replay-command';
import { loadConfig } from '../../src/settings';
import { createDeliveryQueue } from '../../src/queue/delivery-queue';
import { createLocalFileArea } from '../../src/storage/local/local-file-area';
import { runCliProcess } from '../helpers/replay-app';
import { deleteKeys } from '../helpers/test-receiver';

// A replay whose backlog never goes down (no worker takes jobs) stops, and says how to go on
// with exactly what was asked: the ids, the end and the event kept, the times made absolute.
const NOW = new Date('2026-11-24T10:30:00.000Z');

it('a stalled replay of one id prints the command that resumes exactly that replay', async () => {
  const prefix = `test-${randomUUID()}`;
  const redis = new Redis(process.env.REDIS_URL ?? '', { maxRetriesPerRequest: null });
  const queue = createDeliveryQueue({ connection: redis, prefix });
  const args: ReplayArgs = {
    ids: ['item 1'],
    since: '2h',
    until: '30m',
    event: 'audio.ready',
    dryRun: false,
    json: false,
  };
  const query = replayQuery(args, NOW);
  const entries: ArchivedDelivery[] = [1, 2, 3].map((n) => ({
    event: 'audio.ready',
    id: 'item 1',
    received_at: `2026-11-24T09:0${n}:00.000Z`,
    job_id: `job-${n}`,
    delivery: { event: 'audio.ready', data: { id: 'item 1' } },
  }));
  try {
    const replay = replayDeliveries([queue], entries, {
      batchSize: 1,
      maxBacklog: 1,
      stalledAfterMs: 1_000,
      resumeCommand: (from) => resumeCommand(args, query, from),
    });
    await expect(replay).rejects.toThrow(ReplayStalledError);
    await expect(replay).rejects.toThrow(
      "1 replayed so far. Resume with: audio-webhooks replay --id 'item 1' --since 2026-11-24T09:00:00.000Z --until 2026-11-24T10:00:00.000Z --event audio.ready",
    );
  } finally {
    await queue.close();
    await deleteKeys(redis, `${prefix}:*`);
    redis.disconnect();
  }
});

/** One archived delivery of the ranges below: its job id names it in the replay's dedupe id. */
interface Planted {
  readonly name: string;
  readonly event: string;
  readonly receivedAt: Date;
}

/**
 * Archives `planted` in a fresh store, runs `args` as `replay` does until it stalls (no worker
 * takes jobs: one is queued, then the backlog stays at its bound), then runs the command the
 * stall printed, in its own process, once with --dry-run --json and once for real.
 */
async function stallThenResume(args: ReplayArgs, planted: readonly Planted[], startedAt: Date) {
  const dir = mkdtempSync(join(tmpdir(), 'aw-stalled-'));
  const env = {
    REDIS_URL: process.env.REDIS_URL ?? '',
    QUEUE_PREFIX: `test-${randomUUID()}`,
    AUDIO_DIR: join(dir, 'audio'),
  };
  const archive = createArchive(createLocalFileArea(join(env.AUDIO_DIR, '.archive')));
  for (const { name, event, receivedAt } of planted)
    await archive.record({
      delivery: { event, data: { id: name, error: 'synthetic' } },
      jobId: name,
      receivedAt: receivedAt.toISOString(),
    });
  const redis = new Redis(env.REDIS_URL, { maxRetriesPerRequest: null });
  const queue = createDeliveryQueue({ connection: redis, prefix: env.QUEUE_PREFIX });
  const quiet = { out: () => undefined };
  try {
    const stalled: unknown = await runReplay(
      args,
      loadConfig(env, { forCli: true }),
      (work) => work(redis),
      quiet,
      quiet,
      startedAt,
      { batchSize: 1, maxBacklog: 1, stalledAfterMs: 100 },
    ).catch((error: unknown) => error);
    expect(stalled).toBeInstanceOf(ReplayStalledError);
    const message = stalled instanceof Error ? stalled.message : '';
    const [, command = ''] = /Resume with: audio-webhooks (.*)$/.exec(message) ?? [];
    // The values printed here never need quoting, so the words are the arguments.
    const resume = command.split(' ');
    const listed = await runCliProcess([...resume, '--dry-run', '--json'], env);
    const replayed = await runCliProcess(resume, env);
    const jobs = await queue.getJobs(['prioritized', 'wait']);
    return {
      command,
      listed: { ...listed, rows: JSON.parse(listed.stdout || '[]') as { id: string }[] },
      replayed,
      // The replay's dedupe id holds the archived job id, which is the planted name.
      queued: jobs.map((job) => job.deduplicationId?.replace(/^:replay:/, '')).sort(),
    };
  } finally {
    await queue.close();
    await deleteKeys(redis, `${env.QUEUE_PREFIX}:*`);
    redis.disconnect();
    rmSync(dir, { recursive: true, force: true });
  }
}

const names = (planted: readonly Planted[]) => planted.map((p) => p.name).sort();

// Four hours back, so that every time below is past, and in hours of their own.
const HOUR = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000 - 4 * 3_600_000);
const at = (minutes: number) => new Date(HOUR.getTime() + minutes * 60_000);
const plant = (name: string, minutes: number, event = 'audio.failed'): Planted => ({
  name,
  event,
  receivedAt: at(minutes),
});

it('the resume of a stalled --since replay takes nothing from before --since in its first hour, nor what came after the replay started', async () => {
  const startedAt = at(140);
  const before = [plant('before-since', 10)];
  const asked = [plant('in-1', 25), plant('in-2', 40), plant('in-3', 65), plant('in-4', 130)];
  const after = [plant('after-start', 150), plant('after-start-next-hour', 185)];
  const args: ReplayArgs = {
    ids: [],
    since: '2h',
    until: undefined,
    event: undefined,
    dryRun: false,
    json: false,
  };

  const run = await stallThenResume(args, [...before, ...asked, ...after], startedAt);

  expect(run.listed.code).toBe(0);
  expect(run.listed.rows.map((row) => row.id).sort()).toEqual(names(asked));
  // It stalled in the first hour with one of that hour's deliveries queued; the resume queues
  // the rest of what was asked, and the stalled run and its resume queued each once.
  expect(run.replayed.code).toBe(0);
  expect(run.replayed.stdout).toBe(
    '3 deliveries put on the queue again (1 more were already queued by a replay still running)\n',
  );
  expect(run.queued).toEqual(names(asked));
  // `2h` made absolute, and the open end fixed where the stalled run started.
  expect(run.command).toBe(
    `replay --since ${at(20).toISOString()} --until ${startedAt.toISOString()}`,
  );
});

it('the resume of a stalled --since --until --event replay keeps within the range and the event', async () => {
  const before = [plant('before-since', 10)];
  const asked = [plant('in-1', 25), plant('in-2', 40), plant('in-3', 65)];
  const other = [plant('other-event', 35, 'audio.ready'), plant('after-until', 105)];
  const args: ReplayArgs = {
    ids: [],
    since: at(20).toISOString(),
    until: at(90).toISOString(),
    event: 'audio.failed',
    dryRun: false,
    json: false,
  };

  const run = await stallThenResume(args, [...before, ...asked, ...other], new Date());

  expect(run.listed.rows.map((row) => row.id).sort()).toEqual(names(asked));
  expect(run.replayed.stdout).toBe(
    '2 deliveries put on the queue again (1 more were already queued by a replay still running)\n',
  );
  expect(run.queued).toEqual(names(asked));
  expect(run.command).toBe(
    `replay --since ${at(20).toISOString()} --until ${at(90).toISOString()} --event audio.failed`,
  );
});
