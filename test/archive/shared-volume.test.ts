import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { createArchive } from '../../src/archive/archive';
import { createLocalFileArea } from '../../src/storage/local/local-file-area';
import { killAfterTest } from '../helpers/after-test';

// Worker pods share AUDIO_DIR (the Kubernetes base's ReadWriteMany claim), and under the Docker
// image every container's node has the same PID. Two such writers are run here as they would be:
// each in a PID namespace of its own (`unshare --pid --fork`: both are PID 1), on one directory.
const DIST = join(__dirname, '..', '..', 'dist');

interface Writer {
  /** Lines the script printed, as they come. */
  readonly lines: AsyncIterableIterator<string>;
  /** Sends one line, the last: the script's stdin ends, so it can exit. */
  tell(line: string): void;
  readonly exited: Promise<number | null>;
}

/**
 * Runs `script` (CommonJS, `dist` in scope) as PID 1 of a PID namespace of its own. Killed after
 * the test should it still run (it waits on its stdin); `--kill-child` takes the namespace's
 * PID 1 with unshare.
 */
function pidOne(script: string, dir: string): Writer {
  const child = spawn(
    'unshare',
    ['--pid', '--fork', '--kill-child', process.execPath, '-e', script, DIST, dir],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  killAfterTest(child);
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  return {
    lines,
    tell: (line) => child.stdin.end(`${line}\n`),
    exited: once(child, 'exit').then(([code]) => code as number | null),
  };
}

async function next(writer: Writer): Promise<string> {
  const line = await writer.lines.next();
  if (line.done === true) throw new Error('the writer ended early');
  return line.value;
}

const COMMON = `
const [dist, dir] = process.argv.slice(1);
const { join } = require('node:path');
const lines = require('node:readline').createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const heard = async () => (await lines.next()).value;
`;

it('two archive writers that share a PID, on one directory: every write lands, none removes another’s', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'aw-shared-archive-'));
  const script = `${COMMON}
const { createLocalFileArea } = require(join(dist, 'storage', 'local', 'local-file-area.js'));
(async () => {
  const area = createLocalFileArea(dir);
  console.log('pid ' + process.pid);
  await heard();
  const results = await Promise.allSettled(
    Array.from({ length: 200 }, (_u, i) =>
      area.put('2026-11-24/09/w' + process.argv[3] + '-' + i + '.json', Buffer.from('{"n":' + i + '}')),
    ),
  );
  console.log('failed ' + results.filter((r) => r.status === 'rejected').length);
})();`;
  const writers = ['a', 'b'].map((name) =>
    pidOne(script.replace('process.argv[3]', `'${name}'`), dir),
  );
  expect(await Promise.all(writers.map(next))).toEqual(['pid 1', 'pid 1']);
  for (const writer of writers) writer.tell('go');
  expect(await Promise.all(writers.map(next))).toEqual(['failed 0', 'failed 0']);
  await Promise.all(writers.map((writer) => writer.exited));
  expect(readdirSync(join(dir, '2026-11-24', '09')).sort()).toHaveLength(400);
});

it('two workers that share a PID archive into one directory at once: each appends to its own segments, every entry is read once', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'aw-shared-segments-'));
  const script = `${COMMON}
const { createArchive } = require(join(dist, 'archive', 'archive.js'));
const { createLocalFileArea } = require(join(dist, 'storage', 'local', 'local-file-area.js'));
(async () => {
  const archive = createArchive(createLocalFileArea(dir));
  console.log('pid ' + process.pid);
  await heard();
  // 500 deliveries at once, in two hours and all 256 buckets: the same segments' folders as the other writer.
  const results = await Promise.allSettled(
    Array.from({ length: 500 }, (_u, i) =>
      archive.record({
        delivery: { event: 'audio.failed', data: { id: process.argv[3] + '-' + i, error: 'x'.repeat(3000) } },
        jobId: process.argv[3] + '-job-' + i,
        receivedAt: i % 2 === 0 ? '2026-11-24T09:30:00.000Z' : '2026-11-24T10:30:00.000Z',
      }),
    ),
  );
  console.log('failed ' + results.filter((r) => r.status === 'rejected').length);
})();`;
  const writers = ['a', 'b'].map((name) =>
    pidOne(script.replace(/process\.argv\[3\]/g, `'${name}'`), dir),
  );
  expect(await Promise.all(writers.map(next))).toEqual(['pid 1', 'pid 1']);
  for (const writer of writers) writer.tell('go');
  expect(await Promise.all(writers.map(next))).toEqual(['failed 0', 'failed 0']);
  await Promise.all(writers.map((writer) => writer.exited));
  // Read by the archive's reader, as `replay` reads it: all 1,000, none torn, none twice.
  const unreadable: unknown[] = [];
  const ids: string[] = [];
  for await (const entry of createArchive(createLocalFileArea(dir)).find({}, (bad) =>
    unreadable.push(bad),
  ))
    ids.push(entry.id);
  expect(unreadable).toEqual([]);
  expect(ids).toHaveLength(1000);
  expect(new Set(ids).size).toBe(1000);
  // Each writer's own files: two writer names in a bucket folder that both wrote to.
  const writersIn = (bucket: string) =>
    new Set(readdirSync(join(dir, '2026-11-24', '09', bucket)).map((name) => name.split('.')[0]));
  const shared = readdirSync(join(dir, '2026-11-24', '09')).filter(
    (bucket) => writersIn(bucket).size === 2,
  );
  expect(shared.length).toBeGreaterThan(100);
});

it('a worker starting beside another that shares its PID leaves that one’s download in progress alone', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'aw-shared-audio-'));
  // A: a write whose source waits for a line on stdin, so its temp file stays open meanwhile.
  const writing = pidOne(
    `${COMMON}
const { createLocalAudioStore } = require(join(dist, 'storage', 'local', 'local-audio-store.js'));
(async () => {
  const store = await createLocalAudioStore(dir);
  const done = store.write('item.wav', (async function* () {
    yield Buffer.from('first half ');
    console.log('writing');
    await heard();
    yield Buffer.from('second half');
  })());
  await done;
  console.log('written');
})();`,
    dir,
  );
  expect(await next(writing)).toBe('writing');
  const temps = readdirSync(dir).filter((name) => name.startsWith('.partial-'));
  expect(temps).toHaveLength(1);
  // B: a worker's start-up clean-up, as createWorkerContext runs it.
  const starting = pidOne(
    `${COMMON}
const { createLocalAudioStore } = require(join(dist, 'storage', 'local', 'local-audio-store.js'));
(async () => {
  const store = await createLocalAudioStore(dir);
  console.log(JSON.stringify(await store.removeStaleTemps()));
  process.stdin.destroy();
})();`,
    dir,
  );
  expect(await next(starting)).toBe('[]');
  expect(await starting.exited).toBe(0);
  writing.tell('go');
  expect(await next(writing)).toBe('written');
  expect(await writing.exited).toBe(0);
  expect(readdirSync(dir)).toEqual(['item.wav']);
});
