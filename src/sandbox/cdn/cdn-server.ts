import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { CdnCertificate } from './certificate.js';
import { SAMPLE_AUDIO_PATH } from './sample-path.js';

/**
 * The only paths served: names the sandbox itself made (see audio-files.ts), and the sample
 * every `audio-webhooks send audio.ready` points at when CDN_URL is the sandbox's.
 */
const AUDIO_PATH = /^\/audio\/(batch_[0-9a-f]{16})\/(\d{1,6})\.wav$/;

/** The sample's file in the audio folder (a name no batch folder can have). */
export const SAMPLE_FILE = 'sample.wav';

export interface CdnServer {
  readonly server: Server;
  readonly port: number;
  /**
   * GETs answered 200, by path, since the sandbox started: how a test proves an item was
   * downloaded once. One process serves the CDN, so its own count is the whole count.
   */
  readonly hits: ReadonlyMap<string, number>;
  close(): Promise<void>;
}

/**
 * The provider's CDN: HTTPS, GET only, serving the WAVs the sandbox rendered. A path is matched
 * against the names the sandbox makes and never joined from the request as sent.
 */
export async function startCdn(
  audioDir: string,
  certificate: CdnCertificate,
  host: string,
  port: number,
): Promise<CdnServer> {
  const hits = new Map<string, number>();
  const server = createServer({ key: certificate.key, cert: certificate.cert }, (req, res) => {
    const pathname = new URL(req.url ?? '/', 'https://cdn').pathname;
    const match = AUDIO_PATH.exec(pathname);
    if (req.method !== 'GET' || (!match && pathname !== SAMPLE_AUDIO_PATH)) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"not found"}');
      return;
    }
    const path = match
      ? join(audioDir, match[1] ?? '', `${match[2] ?? ''}.wav`)
      : join(audioDir, SAMPLE_FILE);
    stat(path).then(
      (info) => {
        hits.set(pathname, (hits.get(pathname) ?? 0) + 1);
        res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': info.size });
        createReadStream(path).pipe(res);
      },
      () =>
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"not found"}'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    server,
    hits,
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise((resolve) => {
        server.close(() => {
          resolve();
        });
        server.closeAllConnections();
      }),
  };
}
