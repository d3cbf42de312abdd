import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { audio, startLocalCdn, type LocalCdn } from '../../harness/local-cdn';
import { startTestPipeline, type TestPipeline } from '../helpers/test-pipeline';

let cdn: LocalCdn;
let pipeline: TestPipeline | undefined;

beforeAll(async () => {
  cdn = await startLocalCdn();
});
afterAll(() => cdn.close());
afterEach(async () => {
  await pipeline?.close();
  pipeline = undefined;
});

async function start(env: Record<string, string> = {}, workerEnv: Record<string, string> = {}) {
  pipeline = await startTestPipeline(
    { CDN_URL: cdn.origin, DOWNLOAD_ALLOW_PRIVATE_IPS: 'true', ...env },
    cdn.ca,
    workerEnv,
  );
  return pipeline;
}

/** Posts an audio.ready for `path` on the CDN and waits for its job to settle. */
async function deliver(p: TestPipeline, id: string, path: string, origin = cdn.origin) {
  const delivery = sampleDelivery('audio.ready', { id, data: { audio_url: `${origin}${path}` } });
  await p.post(delivery).expect(202);
  return { delivery, outcome: await p.settled(id) };
}

/**
 * Delivers `path` and expects a refusal: the job fails for `reason`, nothing is left behind, and
 * `failed --json` says why.
 */
async function expectRefusedDelivery(p: TestPipeline, id: string, path: string, reason: RegExp) {
  const { outcome } = await deliver(p, id, path);
  expect(outcome).toEqual({ state: 'failed', reason: expect.stringMatching(reason) });
  expect(p.files()).toEqual([]);
  const { code, stdout } = await p.cli('failed', '--json');
  expect(code).toBe(0);
  expect(JSON.parse(stdout)).toEqual([
    expect.objectContaining({
      event: 'audio.ready',
      data_id: id,
      reason: expect.stringMatching(reason),
    }),
  ]);
}

it('a delivery posted over HTTP ends as a file with identical bytes and correct metadata', async () => {
  const bytes = randomBytes(300_000);
  cdn.route('/voices/item-1.mp3', audio(bytes));
  const p = await start();
  const { delivery, outcome } = await deliver(p, 'item-1', '/voices/item-1.mp3');
  expect(outcome.state).toBe('completed');
  expect(p.files()).toEqual(['item-1.json', 'item-1.mp3']);
  expect(readFileSync(join(p.audioDir, 'item-1.mp3')).equals(bytes)).toBe(true);
  const metadata = JSON.parse(readFileSync(join(p.audioDir, 'item-1.json'), 'utf8')) as Record<
    string,
    unknown
  >;
  const data = delivery.data as Record<string, string>;
  expect(metadata).toEqual({
    id: 'item-1',
    event: 'audio.ready',
    kind: 'tts',
    voice: data.voice,
    created_at: data.created_at,
    audio_url: data.audio_url,
    final_url: data.audio_url,
    file: 'item-1.mp3',
    bytes: 300_000,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    content_type: 'audio/mpeg',
    downloaded_at: expect.any(String),
    received_at: expect.any(String),
    job_id: expect.any(String),
  });
});

it('names the file from the content type when the URL has no extension, and encodes unsafe ids', async () => {
  cdn.route('/render', audio(Buffer.from('RIFF....'), 'audio/wav'));
  const p = await start();
  const { outcome } = await deliver(p, '../../etc/passwd', '/render');
  expect(outcome.state).toBe('completed');
  const stem = `~${createHash('sha256').update('../../etc/passwd').digest('hex')}`;
  expect(p.files()).toEqual([`${stem}.json`, `${stem}.wav`]);
});

it('running the same job again does nothing when the file is already whole', async () => {
  cdn.route('/again.mp3', audio(randomBytes(1000)));
  const p = await start();
  await deliver(p, 'again', '/again.mp3');
  const [job] = await p.receiver.queue.getCompleted();
  await job!.retry('completed');
  expect(await p.settled('again')).toMatchObject({ state: 'completed' });
  expect(cdn.hits.get('/again.mp3')).toBe(1);
});

describe('regressions', () => {
  it('a gzip-encoded answer is stored decoded: the file on disk is the audio', async () => {
    const bytes = randomBytes(50_000);
    cdn.route('/zipped.mp3', (req, res) => {
      const encoded = gzipSync(bytes);
      res
        .writeHead(200, {
          'content-type': 'audio/mpeg',
          'content-encoding': 'gzip',
          'content-length': encoded.length,
        })
        .end(encoded);
      expect(req.headers['accept-encoding']).toBe('identity');
    });
    const p = await start();
    const { outcome } = await deliver(p, 'zipped', '/zipped.mp3');
    expect(outcome.state).toBe('completed');
    expect(readFileSync(join(p.audioDir, 'zipped.mp3')).equals(bytes)).toBe(true);
    const metadata = JSON.parse(readFileSync(join(p.audioDir, 'zipped.json'), 'utf8')) as {
      bytes: number;
      sha256: string;
    };
    expect(metadata.bytes).toBe(50_000);
    expect(metadata.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
  });

  it('a gzip bomb stops at DOWNLOAD_MAX_BYTES of decoded audio', async () => {
    const encoded = gzipSync(Buffer.alloc(20_000_000));
    cdn.route('/bomb.mp3', (_req, res) => {
      res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-encoding': 'gzip' }).end(encoded);
    });
    const p = await start({ DOWNLOAD_MAX_BYTES: '1000000' });
    const { outcome } = await deliver(p, 'bomb', '/bomb.mp3');
    expect(outcome).toEqual({
      state: 'failed',
      reason: expect.stringMatching(/over the 1 MB limit/),
    });
    expect(p.files()).toEqual([]);
  });

  it('an encoding it cannot decode is refused for good, with the reason', async () => {
    cdn.route('/zstd.mp3', (_req, res) => {
      res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-encoding': 'zstd' }).end('x');
    });
    const p = await start();
    const { outcome } = await deliver(p, 'zstd', '/zstd.mp3');
    expect(outcome).toEqual({
      state: 'failed',
      reason: expect.stringMatching(/content encoding "zstd" is not supported/),
    });
    expect(cdn.hits.get('/zstd.mp3')).toBe(1);
  });

  it("a name already holding another id's audio fails loudly and overwrites nothing", async () => {
    cdn.route('/taken.mp3', audio(Buffer.from('new audio')));
    const p = await start();
    // What another item left under the same stem (a collision: the two ids map to one name).
    const theirs = Buffer.from('their audio');
    writeFileSync(join(p.audioDir, 'taken.mp3'), theirs);
    writeFileSync(
      join(p.audioDir, 'taken.json'),
      JSON.stringify({ id: 'someone-else', file: 'taken.mp3', bytes: theirs.length, sha256: 'x' }),
    );
    const { outcome } = await deliver(p, 'taken', '/taken.mp3');
    expect(outcome).toEqual({
      state: 'failed',
      reason: expect.stringMatching(
        /file name collision: taken already holds the audio of id "someone-else"/,
      ),
    });
    expect(readFileSync(join(p.audioDir, 'taken.mp3')).equals(theirs)).toBe(true);
    expect(cdn.hits.get('/taken.mp3')).toBeUndefined();
  });

  it('a storage failure says so, naming AUDIO_DIR, and is not called a download failure', async () => {
    cdn.route('/nowhere.mp3', audio(Buffer.from('audio')));
    const p = await start({}, { DOWNLOAD_ATTEMPTS: '1' });
    // AUDIO_DIR replaced by a file after start: every write now fails in the filesystem.
    rmSync(p.audioDir, { recursive: true });
    writeFileSync(p.audioDir, 'not a directory');
    const { outcome } = await deliver(p, 'nowhere', '/nowhere.mp3');
    expect(outcome).toEqual({
      state: 'failed',
      reason: expect.stringMatching(
        /^storage failed reading nowhere\.json in AUDIO_DIR .*: ENOTDIR, not a directory/,
      ),
    });
    rmSync(p.audioDir);
    mkdirSync(p.audioDir);
  });

  it('a write that fails in the filesystem is a storage failure too, and leaves no temp', async () => {
    cdn.route('/blocked.mp3', audio(Buffer.from('audio')));
    const p = await start({}, { DOWNLOAD_ATTEMPTS: '1' });
    mkdirSync(join(p.audioDir, 'blocked.mp3'));
    const { outcome } = await deliver(p, 'blocked', '/blocked.mp3');
    expect(outcome).toEqual({
      state: 'failed',
      reason: expect.stringMatching(/^storage failed writing blocked\.mp3 in AUDIO_DIR .*: EISDIR/),
    });
    expect(p.files()).toEqual(['blocked.mp3']);
  });

  it('DOWNLOAD_ATTEMPTS set on the worker alone governs the retries', async () => {
    cdn.route('/down.mp3', (_req, res) => res.writeHead(503).end());
    const p = await start({ DOWNLOAD_ATTEMPTS: '8' }, { DOWNLOAD_ATTEMPTS: '2' });
    const { outcome } = await deliver(p, 'down', '/down.mp3');
    expect(outcome).toEqual({ state: 'failed', reason: expect.stringMatching(/^503/) });
    expect(cdn.hits.get('/down.mp3')).toBe(2);
  });
});

it('500, 500, 200: downloaded after retries', async () => {
  const bytes = randomBytes(2000);
  cdn.route('/flaky.mp3', (req, res, hit) => {
    if (hit < 3) res.writeHead(500).end();
    else audio(bytes)(req, res, hit);
  });
  const p = await start();
  expect((await deliver(p, 'flaky', '/flaky.mp3')).outcome.state).toBe('completed');
  expect(cdn.hits.get('/flaky.mp3')).toBe(3);
  expect(readFileSync(join(p.audioDir, 'flaky.mp3')).equals(bytes)).toBe(true);
});

it('429 with Retry-After: the retry waits at least that long', async () => {
  const times: number[] = [];
  cdn.route('/busy.mp3', (req, res, hit) => {
    times.push(performance.now());
    if (hit === 1) res.writeHead(429, { 'retry-after': '1' }).end();
    else audio(Buffer.from('ok'))(req, res, hit);
  });
  const p = await start();
  expect((await deliver(p, 'busy', '/busy.mp3')).outcome.state).toBe('completed');
  expect(times).toHaveLength(2);
  expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(1000);
});

it('an understated Content-Length cannot push bytes past it: HTTP framing stops the read', async () => {
  cdn.route('/understated.mp3', (req) => {
    req.socket.write(
      'HTTP/1.1 200 OK\r\ncontent-type: audio/mpeg\r\ncontent-length: 50000\r\n\r\n',
    );
    req.socket.write(randomBytes(3_000_000));
  });
  const p = await start({ DOWNLOAD_MAX_BYTES: '100000' });
  await deliver(p, 'understated', '/understated.mp3');
  expect(statSync(join(p.audioDir, 'understated.mp3')).size).toBe(50_000);
});

it('follows a redirect within CDN_URL', async () => {
  cdn.route('/moved.mp3', (_req, res) => res.writeHead(302, { location: '/here.mp3' }).end());
  cdn.route('/here.mp3', audio(Buffer.from('moved audio')));
  const p = await start();
  expect((await deliver(p, 'moved', '/moved.mp3')).outcome.state).toBe('completed');
  const metadata = JSON.parse(readFileSync(join(p.audioDir, 'moved.json'), 'utf8')) as {
    final_url: string;
  };
  expect(metadata.final_url).toBe(`${cdn.origin}/here.mp3`);
});

describe('refused downloads fail at once, leave no file and say why', () => {
  it.each([
    ['404', (_req, res) => res.writeHead(404).end(), /^404: /],
    [
      'a redirect outside CDN_URL',
      (_req, res) => res.writeHead(302, { location: 'https://evil.example/x.mp3' }).end(),
      /origin https:\/\/evil.example not in CDN_URL/,
    ],
    [
      'a redirect to http://',
      (_req, res) => res.writeHead(301, { location: 'http://127.0.0.1/x.mp3' }).end(),
      /http: URL refused/,
    ],
    [
      'a text/html answer',
      (_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>'),
      /content type "text\/html" is not audio/,
    ],
    [
      'a Content-Length over the cap',
      (_req, res) =>
        res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': 250_000_001 }).end(),
      /250 MB is over the 100 KB limit/,
    ],
  ] satisfies [string, Parameters<LocalCdn['route']>[1], RegExp][])(
    '%s',
    async (name, route, reason) => {
      const path = `/refused-${name.replace(/\W+/g, '-')}.mp3`;
      cdn.route(path, route);
      const p = await start({ DOWNLOAD_MAX_BYTES: '100000' });
      await expectRefusedDelivery(p, 'refused', path, reason);
      expect(cdn.hits.get(path)).toBe(1);
    },
  );

  it('an endless body past the cap', async () => {
    cdn.route('/endless.mp3', (_req, res) => {
      res.writeHead(200, { 'content-type': 'audio/mpeg' });
      const chunk = randomBytes(64 * 1024);
      const pump = () => {
        while (res.write(chunk)) if (res.destroyed) return;
      };
      res.on('drain', pump);
      pump();
    });
    const p = await start({ DOWNLOAD_MAX_BYTES: '1000000' });
    await expectRefusedDelivery(p, 'endless', '/endless.mp3', /over the 1 MB limit/);
  });

  it('a lying length: no framing, the body runs until the connection closes, past the cap', async () => {
    cdn.route('/unframed.mp3', (req) => {
      // HTTP/1.0 style: no Content-Length, no chunking, so only the byte count can stop it.
      req.socket.write('HTTP/1.1 200 OK\r\ncontent-type: audio/mpeg\r\nconnection: close\r\n\r\n');
      req.socket.end(randomBytes(3_000_000));
    });
    const p = await start({ DOWNLOAD_MAX_BYTES: '1000000' });
    await expectRefusedDelivery(p, 'unframed', '/unframed.mp3', /over the 1 MB limit/);
  });

  it('a body that stalls past the deadline', async () => {
    cdn.route('/stall.mp3', (_req, res) => {
      res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': 10_000 });
      res.write(randomBytes(1000));
    });
    const p = await start({ DOWNLOAD_TIMEOUT_MS: '400', DOWNLOAD_ATTEMPTS: '1' });
    await expectRefusedDelivery(p, 'stall', '/stall.mp3', /deadline|timed out/);
  });

  it('a CDN name resolving to 127.0.0.1 while DOWNLOAD_ALLOW_PRIVATE_IPS=false', async () => {
    cdn.route('/private.mp3', audio(Buffer.from('secret')));
    const p = await start({
      CDN_URL: `${cdn.namedOrigin},${cdn.origin}`,
      DOWNLOAD_ALLOW_PRIVATE_IPS: 'false',
    });
    const byName = await deliver(p, 'by-name', '/private.mp3', cdn.namedOrigin);
    expect(byName.outcome).toEqual({
      state: 'failed',
      reason: expect.stringMatching(/localhost resolves to 127.0.0.1, which is not public/),
    });
    const byAddress = await deliver(p, 'by-address', '/private.mp3', cdn.origin);
    expect(byAddress.outcome).toEqual({
      state: 'failed',
      reason: expect.stringMatching(/127.0.0.1 .*not public/),
    });
    expect(cdn.hits.get('/private.mp3')).toBeUndefined();
    expect(p.files()).toEqual([]);
  });
});
