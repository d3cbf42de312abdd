import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { createLocalAudioStore } from '../../src/storage/local/local-audio-store';
import { WRITER_TAG } from '../../src/storage/temp-name';

const fresh = () => mkdtempSync(join(tmpdir(), 'aw-store-'));

function* chunked(data: Buffer, sizes: number[]): Generator<Uint8Array> {
  let offset = 0;
  for (const size of sizes) {
    if (offset >= data.length) break;
    yield data.subarray(offset, offset + size);
    offset += size;
  }
  if (offset < data.length) yield data.subarray(offset);
}

/** A download that breaks after 1.5 MB (past the first 1 MB batch). */
function* failing(): Generator<Uint8Array> {
  yield randomBytes(1_500_000);
  throw new Error('connection reset');
}

it('writes exactly the bytes it was given, whatever the chunking across 1 MB batches', async () => {
  const data = randomBytes(2_500_000);
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.integer({ min: 1, max: 700_000 }), { minLength: 1, maxLength: 12 }),
      async (sizes) => {
        const dir = fresh();
        const store = await createLocalAudioStore(dir);
        await store.write('out.bin', chunked(data, sizes));
        expect(readFileSync(join(dir, 'out.bin')).equals(data)).toBe(true);
        expect(readdirSync(dir)).toEqual(['out.bin']);
      },
    ),
    { numRuns: 15 },
  );
});

it('writes a file larger than the background flush interval (8 MB) intact', async () => {
  const data = randomBytes(20_000_000);
  const dir = fresh();
  const store = await createLocalAudioStore(dir);
  await store.write(
    'big.bin',
    chunked(
      data,
      Array.from({ length: 400 }, () => 50_000),
    ),
  );
  expect(readFileSync(join(dir, 'big.bin')).equals(data)).toBe(true);
  expect(readdirSync(dir)).toEqual(['big.bin']);
});

it('a failing source leaves neither the final file nor a temp file', async () => {
  const dir = fresh();
  const store = await createLocalAudioStore(dir);
  await expect(store.write('out.bin', failing())).rejects.toThrow('connection reset');
  expect(readdirSync(dir)).toEqual([]);
});

it('holds() checks size and SHA-256', async () => {
  const dir = fresh();
  const store = await createLocalAudioStore(dir);
  const data = randomBytes(1000);
  await store.write('a.mp3', [data]);
  const sha = createHash('sha256').update(data).digest('hex');
  expect(await store.holds('a.mp3', 1000, sha)).toBe(true);
  expect(await store.holds('a.mp3', 999, sha)).toBe(false);
  expect(await store.holds('a.mp3', 1000, '0'.repeat(64))).toBe(false);
  expect(await store.holds('missing.mp3', 1000, sha)).toBe(false);
});

it('removes only temps whose writer is dead (same host and PID namespace), not a live one’s nor another host’s', async () => {
  const dir = fresh();
  const tag = WRITER_TAG;
  const dead = `.partial-${tag}-999999999-aa`;
  const alive = `.partial-${tag}-${process.ppid}-bb`;
  const foreign = '.partial-00000000-1-cc';
  for (const name of [dead, alive, foreign, 'keep.mp3']) writeFileSync(join(dir, name), 'x');
  const store = await createLocalAudioStore(dir);
  expect(await store.removeStaleTemps()).toEqual([dead]);
  expect(readdirSync(dir).sort()).toEqual([alive, foreign, 'keep.mp3'].sort());
});

it('a foreign temp gone between readdir and stat (another pod finished) is skipped, not fatal', async () => {
  const dir = fresh();
  const store = await createLocalAudioStore(dir);
  // A dangling link is exactly what stat sees when the file was renamed away after readdir.
  const vanished = '.partial-00000000-1-dd';
  symlinkSync(join(dir, 'renamed-away'), join(dir, vanished));
  expect(await store.removeStaleTemps()).toEqual([]);
});

describe('writeWithMetadata (the audio and its metadata file in one call)', () => {
  const storeIn = async (dir: string) => {
    const store = await createLocalAudioStore(dir);
    const writeWithMetadata = store.writeWithMetadata?.bind(store);
    if (writeWithMetadata === undefined)
      throw new Error('the local store has no writeWithMetadata');
    return writeWithMetadata;
  };

  it('writes both whole, the metadata made after the audio source ended, and leaves no temp', async () => {
    const dir = fresh();
    const write = await storeIn(dir);
    const data = randomBytes(2_500_000);
    let ended = false;
    function* source() {
      yield* chunked(data, [700_000, 1_000_000, 900_000]);
      ended = true;
    }
    await write(
      { name: 'a.mp3', source: source() },
      { name: 'a.json', bytes: () => Buffer.from(JSON.stringify({ ended })) },
    );
    expect(readFileSync(join(dir, 'a.mp3')).equals(data)).toBe(true);
    expect(JSON.parse(readFileSync(join(dir, 'a.json'), 'utf8'))).toEqual({ ended: true });
    expect(readdirSync(dir).sort()).toEqual(['a.json', 'a.mp3']);
  });

  it('a failing audio source leaves nothing and never makes the metadata', async () => {
    const dir = fresh();
    const write = await storeIn(dir);
    const bytes = jest.fn(() => Buffer.from('{}'));
    await expect(
      write({ name: 'a.mp3', source: failing() }, { name: 'a.json', bytes }),
    ).rejects.toThrow('connection reset');
    expect(bytes).not.toHaveBeenCalled();
    expect(readdirSync(dir)).toEqual([]);
  });

  it('metadata that cannot be made leaves neither name, nor the audio’s temp', async () => {
    const dir = fresh();
    const write = await storeIn(dir);
    const bytes = () => {
      throw new Error('no metadata');
    };
    await expect(
      write({ name: 'a.mp3', source: [randomBytes(1000)] }, { name: 'a.json', bytes }),
    ).rejects.toThrow('no metadata');
    expect(readdirSync(dir)).toEqual([]);
  });

  it('two runs of one item at once both succeed and leave one whole pair', async () => {
    const dir = fresh();
    const write = await storeIn(dir);
    const runs = [randomBytes(900_000), randomBytes(900_000)];
    await Promise.all(
      runs.map((data, run) =>
        write(
          { name: 'a.mp3', source: chunked(data, [300_000, 300_000]) },
          { name: 'a.json', bytes: () => Buffer.from(JSON.stringify({ run })) },
        ),
      ),
    );
    const audio = readFileSync(join(dir, 'a.mp3'));
    expect(runs.some((data) => data.equals(audio))).toBe(true);
    const { run } = JSON.parse(readFileSync(join(dir, 'a.json'), 'utf8')) as { run: number };
    expect([0, 1]).toContain(run);
    expect(readdirSync(dir).sort()).toEqual(['a.json', 'a.mp3']);
  });
});
