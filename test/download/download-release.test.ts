import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { createGuardedAgent } from '../../src/download/guarded-agent';
import type { AudioStore } from '../../src/storage/audio-store';
import { StorageError } from '../../src/storage/storage-errors';
import { createAudioDownloader } from '../../src/worker/download-audio';
import { startLocalCdn, type LocalCdn } from '../../harness/local-cdn';

let cdn: LocalCdn;
beforeAll(async () => {
  cdn = await startLocalCdn();
});
afterAll(() => cdn.close());

/**
 * A store that refuses before it reads a byte of the audio (the local store when it cannot
 * create its temp file: no inodes, a read-only mount; or a fork's store).
 */
const refusingStore = {
  readMetadata: () => Promise.resolve(undefined),
  write: () => Promise.reject(new StorageError('no space left on device (ENOSPC)')),
} as unknown as AudioStore;

it('a download whose store refused before reading it lets the CDN connection go at once', async () => {
  // Larger than the socket buffers hold: while unread, the response stays open.
  const body = randomBytes(8 << 20);
  let released = () => {};
  const closed = new Promise<void>((resolve) => (released = resolve));
  cdn.route('/refused.mp3', (_req, res) => {
    res.once('close', released);
    res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': body.length }).end(body);
  });
  const dispatcher = createGuardedAgent({
    allowPrivateIps: true,
    ca: cdn.ca,
    connectTimeoutMs: 5000,
    headersTimeoutMs: 5000,
    bodyIdleTimeoutMs: 60_000,
  });
  try {
    const download = createAudioDownloader({
      // Until DOWNLOAD_TIMEOUT_MS the body was left open, unread (and for good once its timer
      // was cleared when the download ended).
      config: { cdnOrigins: [cdn.origin], downloadMaxBytes: 1 << 30, downloadTimeoutMs: 60_000 },
      store: refusingStore,
      dispatcher,
    });
    const delivery = {
      jobId: '1',
      event: 'audio.ready',
      id: 'refused',
      receivedAt: new Date().toISOString(),
      attempt: 1,
      firstRun: true,
      replay: false,
    };
    await expect(
      download(`${cdn.origin}/refused.mp3`, { id: 'refused' }, delivery, pino({ level: 'silent' })),
    ).rejects.toThrow('ENOSPC');
    await closed;
  } finally {
    await dispatcher.destroy();
  }
}, 15_000);
