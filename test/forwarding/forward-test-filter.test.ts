import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createArchive } from '../../src/archive/archive';
import { createLocalFileArea } from '../../src/storage/local/local-file-area';
import { runCliProcess } from '../helpers/replay-app';

// `audio-webhooks forward test-filter` as an operator runs it, in its own process, over an
// archive written by the archive's own writer in a private AUDIO_DIR.
const dir = mkdtempSync(join(tmpdir(), 'aw-test-filter-'));
const env = {
  REDIS_URL: process.env.REDIS_URL ?? '',
  QUEUE_PREFIX: `test-${randomUUID()}`,
  AUDIO_DIR: join(dir, 'audio'),
};
const minutesAgo = (minutes: number) => new Date(Date.now() - minutes * 60_000).toISOString();
/** Where the two older deliveries and the rest are told apart by --since / --until. */
const BETWEEN = minutesAgo(90);

beforeAll(async () => {
  const archive = createArchive(createLocalFileArea(join(env.AUDIO_DIR, '.archive')));
  const record = (event: string, data: { id: string } & Record<string, unknown>, at: string) =>
    archive.record({ delivery: { event, data }, jobId: randomUUID(), receivedAt: at });
  await record('audio.ready', { id: 'old-nova', voice: 'nova' }, minutesAgo(120));
  await record('audio.ready', { id: 'old-echo', voice: 'echo' }, minutesAgo(110));
  await record('audio.ready', { id: 'new-nova', voice: 'nova', kind: 'tts' }, minutesAgo(30));
  await record('audio.ready', { id: 'new-alloy', voice: 'alloy', kind: 'tts' }, minutesAgo(20));
  await record('audio.failed', { id: 'failed-nova', voice: 'nova' }, minutesAgo(10));
  for (let n = 1; n <= 12; n++)
    await record('key.revoked', { id: `key-${String(n).padStart(2, '0')}` }, minutesAgo(5));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const testFilter = (filter: unknown, ...flags: string[]) =>
  runCliProcess(
    [
      'forward',
      'test-filter',
      typeof filter === 'string' ? filter : JSON.stringify(filter),
      ...flags,
    ],
    env,
  );

it('says how many it matched of how many it read, and the matched ids', async () => {
  const run = await testFilter({
    type: 'audio.ready',
    data: { voice: { $in: ['nova', 'alloy'] } },
  });
  expect(run).toMatchObject({ code: 0, stderr: '' });
  const [summary, heading, ...ids] = run.stdout.trim().split('\n');
  expect(summary).toBe('matched 3 of 17 archived deliveries read');
  expect(heading).toBe('first 3 ids matched:');
  expect(ids.sort()).toEqual(['new-alloy', 'new-nova', 'old-nova']);
});

it('--json: read, matched and at most the first 10 ids', async () => {
  const run = await testFilter({ type: 'key.revoked' }, '--json');
  expect(run.code).toBe(0);
  const answer = JSON.parse(run.stdout) as { read: number; matched: number; ids: string[] };
  expect(answer).toMatchObject({ read: 17, matched: 12 });
  expect(answer.ids).toHaveLength(10);
  expect(answer.ids.every((id) => /^key-\d\d$/.test(id))).toBe(true);
});

it('--since, --until and --event select what is read, as replay selects', async () => {
  const [since, until, event] = await Promise.all([
    testFilter({ data: { voice: 'nova' } }, '--since', BETWEEN, '--json'),
    testFilter({ data: { voice: 'nova' } }, '--until', BETWEEN, '--json'),
    testFilter({ data: { kind: 'tts' } }, '--event', 'audio.ready', '--json'),
  ]);
  expect(JSON.parse(since.stdout)).toEqual({ read: 15, matched: 2, ids: expect.any(Array) });
  expect(JSON.parse(until.stdout)).toEqual({ read: 2, matched: 1, ids: ['old-nova'] });
  expect(JSON.parse(event.stdout)).toMatchObject({ read: 4, matched: 2 });
});

it('the message seen: timestamp is when the delivery was received, and there is no stored', async () => {
  const [recent, stored] = await Promise.all([
    testFilter({ timestamp: { $gte: BETWEEN }, id: { $startsWith: 'new-' } }, '--json'),
    testFilter({ stored: { $exist: true } }, '--json'),
  ]);
  expect(JSON.parse(recent.stdout)).toMatchObject({ matched: 2 });
  expect(JSON.parse(stored.stdout)).toMatchObject({ read: 17, matched: 0 });
});

it('a filter that would refuse the start: exit 2, and the problem in one line', async () => {
  const [bad, notJson] = await Promise.all([
    testFilter({ data: { voice: { $regex: '^n' } } }),
    testFilter('{type: audio.ready}'),
  ]);
  expect(bad.code).toBe(2);
  expect(bad.stdout).toBe('');
  expect(bad.stderr).toBe(
    'audio-webhooks: filter at data.voice: unknown operator $regex (see: audio-webhooks help forward)\n',
  );
  expect(notJson.code).toBe(2);
  expect(notJson.stderr.trim().split('\n')).toEqual([
    'audio-webhooks: forward test-filter: the filter is not JSON (see: audio-webhooks help forward)',
  ]);
});
