import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { startLocalCdn, type LocalCdn } from '../harness/local-cdn.js';
import { cdnContent, contentTypeOf } from './cdn-content.js';
import type { CdnFile } from './traffic-plan.js';

/**
 * The CDN of the soak's audio.ready and custom events: a real HTTPS server on loopback (the
 * tests' local CDN) serving `/a/<n><ext>` with the bytes of cdn-content.ts, and the CDN faults.
 * The sandbox's own CDN serves its batches' WAVs but has no faults to inject, so the soak's
 * deliveries point here (CDN_URL lists both origins).
 *
 * - failing: 500, 502 or 503, or the connection reset before any answer;
 * - slow: 16 KiB per 100 ms, for as long as the fault lasts (the rest at once after it);
 * - truncating: the full content-length promised, part of the bytes sent, the connection cut.
 */
export type CdnMode = 'normal' | 'failing' | 'slow' | 'truncating';

export interface FaultCdn {
  readonly origin: string;
  /** The PEM certificate the workers must trust (DOWNLOAD_CA_FILE). */
  readonly ca: string;
  mode: CdnMode;
  /** Makes `file` servable. */
  add(file: CdnFile): void;
  /** Requests answered, cut or failed, by mode. */
  readonly served: Record<CdnMode, number>;
  close(): Promise<void>;
}

const SLOW_CHUNK = 16 * 1024;
const SLOW_EVERY_MS = 100;
const PATH = /^\/a\/(\d+)(\.[A-Za-z0-9]+)?$/;

export async function startFaultCdn(seed: number): Promise<FaultCdn> {
  const cdn: LocalCdn = await startLocalCdn();
  const files = new Map<number, CdnFile>();
  let cuts = 0;
  const state: FaultCdn = {
    origin: cdn.origin,
    ca: cdn.ca,
    mode: 'normal',
    add: (file) => files.set(file.n, file),
    served: { normal: 0, failing: 0, slow: 0, truncating: 0 },
    close: () => cdn.close(),
  };
  const serve = async (res: ServerResponse, file: CdnFile) => {
    const mode = state.mode;
    state.served[mode] += 1;
    if (mode === 'failing') {
      cuts += 1;
      if (cuts % 4 === 0) res.socket?.destroy();
      else res.writeHead([500, 502, 503][cuts % 3] ?? 503).end('{"detail":"soak: CDN failing"}');
      return;
    }
    const body = cdnContent(seed, file.n, file.size);
    res.writeHead(200, { 'content-type': contentTypeOf(file.ext), 'content-length': body.length });
    if (mode === 'truncating') {
      cuts += 1;
      res.write(body.subarray(0, Math.floor((body.length * (cuts % 10)) / 10)), () =>
        res.socket?.destroy(),
      );
      return;
    }
    let sent = 0;
    while (state.mode === 'slow' && sent < body.length && !res.destroyed) {
      res.write(body.subarray(sent, sent + SLOW_CHUNK));
      sent += SLOW_CHUNK;
      await sleep(SLOW_EVERY_MS);
    }
    if (!res.destroyed) res.end(body.subarray(Math.min(sent, body.length)));
  };
  cdn.fallback((req, res) => {
    const match = PATH.exec(new URL(req.url ?? '/', 'https://cdn').pathname);
    const file = match === null ? undefined : files.get(Number(match[1]));
    if (req.method !== 'GET' || file === undefined || (match?.[2] ?? '') !== file.ext) {
      res.writeHead(404).end('{"detail":"not found"}');
      return;
    }
    void serve(res, file);
  });
  return state;
}
