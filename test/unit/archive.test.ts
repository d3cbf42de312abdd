import { mkdtempSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { archivePath, createArchive, type UnreadableEntry } from '../../src/archive/archive';
import { parseWhen, replayQuery, type ReplayArgs } from '../../src/cli/replay-command';
import { UsageError } from '../../src/cli/cli-errors';
import { archiveSegments } from '../../src/storage/archive-path';
import { createLocalArchiveArea } from '../../src/storage/local-archive-area';

const NOW = new Date('2026-11-24T10:30:00.000Z');

describe('parseWhen', () => {
  it.each([
    ['90m', '2026-11-24T09:00:00.000Z'],
    ['2h', '2026-11-24T08:30:00.000Z'],
    ['3d', '2026-11-21T10:30:00.000Z'],
    ['2026-11-24T09:15:00Z', '2026-11-24T09:15:00.000Z'],
    ['2026-11-24T09:15:00.250+01:00', '2026-11-24T08:15:00.250Z'],
    ['2026-11-24T09:15', '2026-11-24T09:15:00.000Z'],
    ['2026-11-24', '2026-11-24T00:00:00.000Z'],
  ])('%s → %s', (text, iso) => {
    expect(parseWhen('since', text, NOW).toISOString()).toBe(iso);
  });

  it.each([
    'yesterday',
    '2h ago',
    '-2h',
    '2w',
    '2026-13-01',
    '2026-11-24 09:00',
    '',
    '1.5h',
    // Dates that are not in the calendar: Date.parse would take the first as March 2.
    '2026-02-30',
    '2026-02-29T10:00:00Z',
    '2026-04-31',
  ])('%j is a usage error naming the flag', (text) => {
    expect(() => parseWhen('until', text, NOW)).toThrow(UsageError);
    expect(() => parseWhen('until', text, NOW)).toThrow(/^--until /);
  });
});

describe('replayQuery', () => {
  const args = (over: Partial<ReplayArgs>): ReplayArgs => ({
    ids: [],
    since: undefined,
    until: undefined,
    event: undefined,
    dryRun: false,
    json: false,
    ...over,
  });

  it('asks for --id or --since, --json only with --dry-run, and a range that runs forwards', () => {
    expect(() => replayQuery(args({}), NOW)).toThrow('replay takes --id ID');
    expect(() => replayQuery(args({ until: '1h' }), NOW)).toThrow('replay takes --id ID');
    expect(() => replayQuery(args({ ids: ['a'], json: true }), NOW)).toThrow('--json goes with');
    expect(() => replayQuery(args({ since: '1h', until: '2h' }), NOW)).toThrow('is after --until');
    expect(() => replayQuery(args({ ids: [''] }), NOW)).toThrow('--id must not be empty');
  });

  it('passes ids once each, the times and the event', () => {
    expect(
      replayQuery(args({ ids: ['a', 'b', 'a'], since: '2h', event: 'audio.ready' }), NOW),
    ).toEqual({
      ids: ['a', 'b'],
      since: new Date('2026-11-24T08:30:00.000Z'),
      event: 'audio.ready',
    });
  });
});

describe('the archive layout', () => {
  it('files a delivery by the hour it was received, then by item, under a name made of the time and the job', () => {
    expect(archivePath('2026-11-24T09:15:02.123Z', 'b6f0c3e2-1', 'item-1')).toBe(
      '2026-11-24/09/item-1/20261124T091502123Z_b6f0c3e2-1.json',
    );
    // An id unsafe as a name, and a job id that is not ours, never reach the path as they are.
    const path = archivePath('2026-11-24T09:15:02.123Z', 'job:with/slash', '../../etc/passwd');
    expect(path).toMatch(/^2026-11-24\/09\/~[0-9a-f]{64}\/20261124T091502123Z_[0-9a-f]{32}\.json$/);
    expect(archiveSegments(path, 'file')).toHaveLength(4);
  });

  it.each(['../x', 'a/../b', '.hidden', 'a//b', '/abs', 'a\\b'])(
    'refuses the path %j in a store',
    (path) => {
      expect(() => archiveSegments(path, 'file')).toThrow('not an archive file path');
    },
  );
});

describe('an archive in a local folder', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'aw-archive-'));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  const deliveries = [
    { at: '2026-11-23T22:59:59.999Z', event: 'audio.ready', id: 'a' },
    { at: '2026-11-23T23:00:00.000Z', event: 'audio.failed', id: 'b' },
    { at: '2026-11-24T09:10:00.000Z', event: 'audio.ready', id: 'a' },
    { at: '2026-11-24T09:59:00.000Z', event: 'key.revoked', id: 'weird id/..' },
  ];

  async function filled() {
    const archive = createArchive(createLocalArchiveArea(dir));
    for (const [index, { at, event, id }] of deliveries.entries())
      await archive.record({
        delivery: { event, data: { id } },
        jobId: `job-${index}`,
        receivedAt: at,
      });
    return archive;
  }

  const found = async (
    archive: ReturnType<typeof createArchive>,
    query: Parameters<ReturnType<typeof createArchive>['find']>[0],
  ) => {
    const rows: string[] = [];
    for await (const entry of archive.find(query)) rows.push(`${entry.received_at} ${entry.id}`);
    return rows;
  };

  it('finds by time range (both ends included), by id across hours, and by event, oldest hour first', async () => {
    const archive = await filled();
    expect(
      await found(archive, {
        since: new Date('2026-11-23T23:00:00.000Z'),
        until: new Date('2026-11-24T09:10:00.000Z'),
      }),
    ).toEqual(['2026-11-23T23:00:00.000Z b', '2026-11-24T09:10:00.000Z a']);
    expect(await found(archive, { ids: ['a'] })).toEqual([
      '2026-11-23T22:59:59.999Z a',
      '2026-11-24T09:10:00.000Z a',
    ]);
    expect(await found(archive, { ids: ['weird id/..'] })).toEqual([
      '2026-11-24T09:59:00.000Z weird id/..',
    ]);
    expect(
      await found(archive, { event: 'audio.ready', since: new Date('2026-11-24T00:00:00Z') }),
    ).toEqual(['2026-11-24T09:10:00.000Z a']);
    expect(await archive.hours({ since: new Date('2026-11-24T00:00:00Z') })).toEqual([
      '2026-11-24/09/',
    ]);
    expect(await archive.hours({})).toEqual(['2026-11-23/22/', '2026-11-23/23/', '2026-11-24/09/']);
  });

  it('records the same delivery twice under one name (a re-run job), and keeps the delivery whole', async () => {
    const archive = await filled();
    await archive.record({
      delivery: { event: 'audio.ready', data: { id: 'a', extra: { nested: true } } },
      jobId: 'job-2',
      receivedAt: '2026-11-24T09:10:00.000Z',
    });
    const entries = [];
    for await (const entry of archive.find({ ids: ['a'] })) entries.push(entry);
    expect(entries).toHaveLength(2);
    expect(entries[1]).toEqual({
      event: 'audio.ready',
      id: 'a',
      received_at: '2026-11-24T09:10:00.000Z',
      job_id: 'job-2',
      delivery: { event: 'audio.ready', data: { id: 'a', extra: { nested: true } } },
    });
  });

  it('reports a file that is not an entry instead of replaying it, and ignores what is not its layout', async () => {
    const archive = await filled();
    const hour = join(dir, '2026-11-24', '09');
    mkdirSync(join(hour, 'broken'));
    writeFileSync(join(hour, 'broken', '20261124T092000000Z_job-9.json'), '{"event":');
    writeFileSync(join(hour, 'notes.txt'), 'not an entry');
    mkdirSync(join(dir, 'lost+found'));
    const unreadable: UnreadableEntry[] = [];
    const ids: string[] = [];
    for await (const entry of archive.find({ since: new Date('2026-11-24T00:00:00Z') }, (bad) =>
      unreadable.push(bad),
    ))
      ids.push(entry.id);
    expect(ids.sort()).toEqual(['a', 'weird id/..']);
    expect(unreadable.map((bad) => bad.path)).toEqual([
      '2026-11-24/09/broken/20261124T092000000Z_job-9.json',
    ]);
  });

  it('sweeps whole hours past the retention, and a day folder once all of it is past', async () => {
    const archive = await filled();
    // Retention 10 h at 10:30: the cut-off is 00:30, so the 23:00 hour (ends 00:00) goes.
    const removed = await archive.sweep(10, NOW);
    expect(removed).toEqual(['2026-11-23/22/', '2026-11-23/23/']);
    expect(readdirSync(dir)).toEqual(['2026-11-24']);
    expect((await found(archive, {})).sort()).toEqual([
      '2026-11-24T09:10:00.000Z a',
      '2026-11-24T09:59:00.000Z weird id/..',
    ]);
    expect(await archive.sweep(10, NOW)).toEqual([]);
  });

  it('still reads entries of the first layout (<hour>/<time>_<job>_<stem>.json) by range', async () => {
    const archive = await filled();
    const entry = {
      event: 'audio.ready',
      id: 'old',
      received_at: '2026-11-24T09:05:00.000Z',
      job_id: 'job-old',
      delivery: { event: 'audio.ready', data: { id: 'old' } },
    };
    writeFileSync(
      join(dir, '2026-11-24', '09', '20261124T090500000Z_job-old_old.json'),
      JSON.stringify(entry),
    );
    expect(await found(archive, { since: new Date('2026-11-24T09:00:00Z') })).toContain(
      '2026-11-24T09:05:00.000Z old',
    );
  });

  it('an id is looked for in its own folder of each hour, never by listing the hour', async () => {
    await filled();
    // An hour of others: a listing of the hour would meet them; the id's folder does not.
    const hour = join(dir, '2026-11-24', '09');
    for (let i = 0; i < 50; i++) mkdirSync(join(hour, `other-${i}`));
    const listed: string[] = [];
    const area = createLocalArchiveArea(dir);
    const watched = createArchive({
      ...area,
      list: (folder, options) => {
        listed.push(`${folder}${options?.deep === true ? ' (deep)' : ''}`);
        return area.list(folder, options);
      },
    });
    expect(await found(watched, { ids: ['a'] })).toHaveLength(2);
    expect(listed.filter((folder) => folder.split('/').length > 3)).toEqual([
      '2026-11-23/22/a/',
      '2026-11-23/23/a/',
      '2026-11-24/09/a/',
    ]);
  });
});
