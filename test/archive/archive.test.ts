import { mkdtempSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createArchive, type UnreadableEntry } from '../../src/archive/archive';
import { bucketFolder } from '../../src/archive/folders';
import { parseWhen, replayQuery, type ReplayArgs } from '../../src/cli/replay-command';
import { UsageError } from '../../src/cli/cli-errors';
import { archiveSegments } from '../../src/storage/archive-path';
import { entryFilePath } from '../../harness/archive-entries';
import type { FileArea } from '../../src/storage/audio-store';
import { createLocalFileArea } from '../../src/storage/local/local-file-area';

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
  it('puts an id in one of 256 buckets by its SHA-256, a folder name no file stem can be', () => {
    expect(bucketFolder('a')).toBe('~ca/');
    expect(bucketFolder('../../etc/passwd')).toMatch(/^~[0-9a-f]{2}\/$/);
    const buckets = new Set(Array.from({ length: 5000 }, (_u, i) => bucketFolder(`item-${i}`)));
    expect(buckets.size).toBe(256);
  });

  it.each(['../x', 'a/../b', '.hidden', 'a//b', '/abs', 'a\\b'])(
    'refuses the path %j in a store',
    (path) => {
      expect(() => archiveSegments(path, 'file')).toThrow('not an archive file path');
    },
  );
});

// The local store's area appends (segments); S3's and a custom store's put whole files
// (batches): the same archive, read the same way, over both.
describe.each([
  ['segments (an area that appends: the local store)', true],
  ['batches (an area that puts whole files only: S3)', false],
])('an archive in a local folder, as %s', (_layout, appends) => {
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

  const areaIn = (folder: string): FileArea => {
    const area = createLocalFileArea(folder);
    if (appends) return area;
    return {
      put: (path, body) => area.put(path, body),
      get: (path) => area.get(path),
      list: (path, options) => area.list(path, options),
      remove: (path) => area.remove(path),
    };
  };

  async function filled() {
    const archive = createArchive(areaIn(dir));
    for (const [index, { at, event, id }] of deliveries.entries())
      await archive.record({
        delivery: { event, data: { id } },
        jobId: `job-${index}`,
        receivedAt: at,
      });
    return archive;
  }

  /** An audio.failed delivery of `id`, by job `job-<id>`. */
  const recordFailure = (
    archive: ReturnType<typeof createArchive>,
    id: string,
    receivedAt = '2026-11-24T09:00:00.000Z',
  ) =>
    archive.record({
      delivery: { event: 'audio.failed', data: { id } },
      jobId: `job-${id}`,
      receivedAt,
    });

  /** As recordFailure, but the caller says when it waits (Archive.begin). */
  const beginFailure = (archive: ReturnType<typeof createArchive>, id: string) =>
    archive.begin({
      delivery: { event: 'audio.failed', data: { id } },
      jobId: `job-${id}`,
      receivedAt: '2026-11-24T09:00:00.000Z',
    });

  /** An archive of batches whose PUTs go through `put`, given the area's own. */
  const withPut = (
    put: (area: FileArea, path: string, body: Uint8Array) => Promise<void>,
    batchLingerMs: number,
  ) => {
    const area = areaIn(dir);
    return createArchive(
      { ...area, put: (path, body) => put(area, path, body) },
      { batchLingerMs },
    );
  };

  /** A promise, and the call that resolves it: a test waits on an event it names. */
  const signal = () => {
    let fire = () => {};
    const fired = new Promise<void>((resolve) => (fire = resolve));
    return { fire, fired };
  };

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

  it('reads a delivery archived twice (a re-run job, here by another worker) once, and keeps it whole', async () => {
    const archive = await filled();
    const delivery = { event: 'audio.ready', data: { id: 'a', extra: { nested: true } } };
    const rerun = { delivery, jobId: 'job-9', receivedAt: '2026-11-24T09:10:00.000Z' };
    await archive.record(rerun);
    await createArchive(areaIn(dir)).record(rerun);
    await archive.record(rerun);
    const entries = [];
    for await (const entry of archive.find({ ids: ['a'] })) entries.push(entry);
    expect(entries.map((entry) => entry.job_id).sort()).toEqual(['job-0', 'job-2', 'job-9']);
    expect(entries.find((entry) => entry.job_id === 'job-9')).toEqual({
      event: 'audio.ready',
      id: 'a',
      received_at: '2026-11-24T09:10:00.000Z',
      job_id: 'job-9',
      delivery,
    });
    expect(await found(archive, { since: new Date('2026-11-24T09:10:00.000Z') })).toHaveLength(3);
  });

  it("never makes a path of a delivery's text: an unsafe id and a job id not ours", async () => {
    const archive = createArchive(areaIn(dir));
    await archive.record({
      delivery: { event: 'audio.failed', data: { id: '../../etc/passwd' } },
      jobId: 'job:with/slash',
      receivedAt: '2026-11-24T09:15:02.123Z',
    });
    const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((path) =>
      path.endsWith('json'),
    );
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(
      /^2026-11-24\/09\/(~[0-9a-f]{2}|~batches)\/\d{8}T\d{9}Z-[0-9a-f]{8}(-1\.[0-9a-f]{64})?\.ndjson$/,
    );
    expect(archiveSegments(files[0] ?? '', 'file')).toHaveLength(4);
    expect(await found(archive, { ids: ['../../etc/passwd'] })).toHaveLength(1);
  });

  it('an entry that cannot be made (a receipt time that is no time) fails through its promise, never by a throw', async () => {
    const archive = createArchive(areaIn(dir));
    const accepted = {
      delivery: { event: 'audio.failed', data: { id: 'x' } },
      jobId: 'job-x',
      receivedAt: 'not a time',
    };
    let line: ReturnType<typeof archive.begin> | undefined;
    expect(() => (line = archive.begin(accepted))).not.toThrow();
    await expect(line?.written()).rejects.toThrow(RangeError);
    await expect(archive.record(accepted)).rejects.toThrow(RangeError);
  });

  it('archives many deliveries at once, each whole and found once', async () => {
    const archive = createArchive(areaIn(dir));
    const ids = Array.from({ length: 500 }, (_u, i) => `many-${i}`);
    const text = 'x'.repeat(2000);
    await Promise.all(
      ids.map((id, i) =>
        archive.record({
          delivery: { event: 'audio.failed', data: { id, error: text } },
          jobId: `job-${i}`,
          receivedAt: `2026-11-24T09:${String(i % 60).padStart(2, '0')}:00.000Z`,
        }),
      ),
    );
    const unreadable: UnreadableEntry[] = [];
    const entries = [];
    for await (const entry of archive.find({}, (bad) => unreadable.push(bad))) entries.push(entry);
    expect(unreadable).toEqual([]);
    expect(entries.map((entry) => entry.id).sort()).toEqual([...ids].sort());
    expect(entries.every((entry) => entry.delivery.data.error === text)).toBe(true);
    expect((await found(archive, { ids: ['many-7', 'many-300'] })).sort()).toEqual([
      '2026-11-24T09:00:00.000Z many-300',
      '2026-11-24T09:07:00.000Z many-7',
    ]);
  });

  if (appends)
    it('lines for one segment that arrive while it is being appended to go in one append together', async () => {
      const area = createLocalFileArea(dir);
      const appended: number[] = [];
      const archive = createArchive({
        ...area,
        append: async (path, body) => {
          appended.push(Buffer.from(body).toString('utf8').split('\n').length - 1);
          return area.append?.(path, body);
        },
      });
      // One id, 100 re-runs of its job at once: one bucket, one segment.
      await Promise.all(
        Array.from({ length: 100 }, (_u, i) =>
          archive.record({
            delivery: { event: 'audio.failed', data: { id: 'same' } },
            jobId: `job-${i}`,
            receivedAt: '2026-11-24T09:00:00.000Z',
          }),
        ),
      );
      expect(appended).toEqual([1, 99]);
      expect(await found(archive, { ids: ['same'] })).toHaveLength(100);
    });

  if (appends)
    it('an append that failed part-way (a full disk) costs its own entries only: the writer moves to a new file', async () => {
      const area = createLocalFileArea(dir);
      let failNext = true;
      const archive = createArchive({
        ...area,
        append: async (path, body) => {
          if (!failNext) return area.append?.(path, body);
          failNext = false;
          await area.append?.(path, body.subarray(0, 40));
          throw new Error('ENOSPC: no space left on device');
        },
      });
      const record = (id: string) => recordFailure(archive, id);
      // Two ids of one bucket: without the move, both would go to one file.
      const [first, second] = ['torn-0', 'torn-4'];
      expect(bucketFolder(first)).toBe(bucketFolder(second));
      await expect(record(first)).rejects.toThrow('ENOSPC');
      await record(second);
      const unreadable: UnreadableEntry[] = [];
      const ids: string[] = [];
      for await (const entry of archive.find({}, (bad) => unreadable.push(bad))) ids.push(entry.id);
      expect(ids).toEqual([second]);
      expect(unreadable.map((bad) => bad.reason)).toEqual([
        'an unfinished line (being appended as it was read, or its writer stopped then)',
      ]);
      expect(readdirSync(join(dir, '2026-11-24', '09', bucketFolder(first)))).toHaveLength(2);
    });

  if (!appends)
    it('entries within the linger share one PUT, named by the buckets it holds; an id reads only the batches holding its bucket', async () => {
      const area = areaIn(dir);
      const puts: string[] = [];
      const read: string[] = [];
      const archive = createArchive({
        ...area,
        put: (path, body) => {
          puts.push(path);
          return area.put(path, body);
        },
        get: (path) => {
          read.push(path);
          return area.get(path);
        },
      });
      const record = (id: string, at: string) => recordFailure(archive, id, at);
      // 'a' is in bucket 0xca, 'b' in 0x3e: the first two share a batch; the third, of another
      // hour, has its own; the fourth comes after the first batch was written.
      await Promise.all([
        record('a', '2026-11-24T09:00:00.000Z'),
        record('b', '2026-11-24T09:30:00.000Z'),
        record('c', '2026-11-24T10:00:00.000Z'),
      ]);
      await record('d', '2026-11-24T09:45:00.000Z');
      expect(puts).toHaveLength(3);
      const [shared] = puts;
      const bitmap = /\.([0-9a-f]{64})\.ndjson$/.exec(shared ?? '')?.[1] ?? '';
      const held = Buffer.from(bitmap, 'hex');
      const set = [...held].flatMap((byte, at) =>
        Array.from({ length: 8 }, (_u, bit) => ((byte >> bit) & 1 ? at * 8 + bit : [])).flat(),
      );
      expect(set.map((bucket) => `~${bucket.toString(16).padStart(2, '0')}/`).sort()).toEqual(
        [bucketFolder('a'), bucketFolder('b')].sort(),
      );
      expect(await found(archive, { ids: ['a'] })).toEqual(['2026-11-24T09:00:00.000Z a']);
      expect(read).toEqual([shared]);
    });

  if (!appends)
    it('an entry its job waits for is put at once, not after the linger', async () => {
      // A linger longer than the test's own time: before, the PUT waited it out.
      const archive = createArchive(areaIn(dir), { batchLingerMs: 60_000 });
      await recordFailure(archive, 'waited');
      expect(await found(archive, { ids: ['waited'] })).toHaveLength(1);
    }, 10_000);

  if (!appends)
    it('while a PUT is in flight, the entries waited for gather in the next batch, put when it ends (group commit)', async () => {
      const area = areaIn(dir);
      const lines: number[] = [];
      const started = signal();
      const held = signal();
      const archive = createArchive(
        {
          ...area,
          put: async (path, body) => {
            lines.push(Buffer.from(body).toString('utf8').split('\n').length - 1);
            if (lines.length === 1) {
              started.fire();
              await held.fired;
            }
            return area.put(path, body);
          },
        },
        { batchLingerMs: 60_000 },
      );
      const first = recordFailure(archive, 'first');
      await started.fired;
      const rest = ['r1', 'r2', 'r3', 'r4'].map((id) => recordFailure(archive, id));
      // Each of them is waited for, and none is put while the first PUT is in flight.
      await Promise.resolve();
      expect(lines).toEqual([1]);
      held.fire();
      await Promise.all([first, ...rest]);
      expect(lines).toEqual([1, 4]);
      expect(await found(archive, {})).toHaveLength(5);
    }, 10_000);

  if (!appends)
    it('an entry no one waits for yet lingers for others, then is put', async () => {
      const put = signal();
      const archive = withPut(async (area, path, body) => {
        await area.put(path, body);
        put.fire();
      }, 20);
      const line = beginFailure(archive, 'early');
      await put.fired;
      await line.written();
      expect(await found(archive, { ids: ['early'] })).toHaveLength(1);
    });

  if (!appends)
    it('a batch that fails before its line is waited for fails the wait, and nothing before it', async () => {
      const putFailed = signal();
      const archive = withPut(() => {
        putFailed.fire();
        return Promise.reject(new Error('503 Slow Down'));
      }, 5);
      const line = beginFailure(archive, 'lost-early');
      // The PUT fails while no one waits (an unhandled rejection here would end the process).
      await putFailed.fired;
      await new Promise<void>((resolve) => setImmediate(resolve));
      await expect(line.written()).rejects.toThrow('503 Slow Down');
    });

  if (!appends)
    it('a batch whose PUT failed fails its own entries only', async () => {
      const area = areaIn(dir);
      let failNext = true;
      const archive = createArchive({
        ...area,
        put: async (path, body) => {
          if (!failNext) return area.put(path, body);
          failNext = false;
          throw new Error('503 Slow Down');
        },
      });
      const record = (id: string) => recordFailure(archive, id);
      const first = [record('x'), record('y')];
      await expect(Promise.all(first)).rejects.toThrow('503 Slow Down');
      await expect(first[1]).rejects.toThrow('503 Slow Down');
      await record('z');
      expect(await found(archive, {})).toEqual(['2026-11-24T09:00:00.000Z z']);
    });

  it('reports a file that is not an entry instead of replaying it, and ignores what is not its layout', async () => {
    const archive = await filled();
    const hour = join(dir, '2026-11-24', '09');
    // A segment whose writer stopped while appending its last line.
    mkdirSync(join(hour, '~00'));
    writeFileSync(
      join(hour, '~00', '20261124T090000000Z-0badf00d.ndjson'),
      '{"event":"audio.ready","id":"c","received_at":"2026-11-24T09:30:00.000Z","job_id":"j","delivery":{"event":"audio.ready","data":{"id":"c"}}}\n{"event":"aud',
    );
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
    expect(ids.sort()).toEqual(['a', 'c', 'weird id/..']);
    expect(unreadable.map((bad) => `${bad.path}: ${bad.reason}`).sort()).toEqual([
      '2026-11-24/09/broken/20261124T092000000Z_job-9.json: SyntaxError: Unexpected end of JSON input',
      '2026-11-24/09/~00/20261124T090000000Z-0badf00d.ndjson:2: an unfinished line (being appended as it was read, or its writer stopped then)',
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

  it('still reads entry files (<hour>/<stem>/<time>_<job>.json, before batches) by id and by range', async () => {
    const archive = await filled();
    const entry = (jobId: string) => ({
      event: 'audio.ready',
      id: 'earlier',
      received_at: '2026-11-24T09:20:00.000Z',
      job_id: jobId,
      delivery: { event: 'audio.ready', data: { id: 'earlier' } },
    });
    const area = areaIn(dir);
    for (const jobId of ['job-e1', 'job-e2', 'job-e1'])
      await area.put(
        entryFilePath('2026-11-24T09:20:00.000Z', jobId, 'earlier'),
        Buffer.from(JSON.stringify(entry(jobId))),
      );
    expect(await found(archive, { ids: ['earlier'] })).toEqual([
      '2026-11-24T09:20:00.000Z earlier',
      '2026-11-24T09:20:00.000Z earlier',
    ]);
    expect(
      (await found(archive, { since: new Date('2026-11-24T09:15:00Z') })).filter((row) =>
        row.endsWith(' earlier'),
      ),
    ).toHaveLength(2);
  });

  it('an id is looked for in its own folder and bucket of each hour, never by listing the hour', async () => {
    await filled();
    // An hour of others: a listing of the hour would meet them; the id's folders do not.
    const hour = join(dir, '2026-11-24', '09');
    for (let i = 0; i < 50; i++) mkdirSync(join(hour, `other-${i}`));
    const listed: string[] = [];
    const area = areaIn(dir);
    const watched = createArchive({
      ...area,
      list: (folder, options) => {
        listed.push(`${folder}${options?.deep === true ? ' (deep)' : ''}`);
        return area.list(folder, options);
      },
    });
    expect(await found(watched, { ids: ['a'] })).toHaveLength(2);
    expect(listed.filter((folder) => folder.split('/').length > 3)).toEqual(
      ['2026-11-23/22/', '2026-11-23/23/', '2026-11-24/09/'].flatMap((inHour) => [
        `${inHour}a/`,
        `${inHour}~ca/`,
        `${inHour}~batches/`,
      ]),
    );
  });
});
