/**
 * A probe for taking the worker's download apart (bench/pair.ts --parts), forked as
 * bench/download-probe.ts is: the same URLs, each run adding one part of what the worker does,
 * so that the difference between two parts is that part's cost. Reports seconds and this
 * process's CPU time.
 *
 * - `bare`: plain undici, the body discarded (the probe's bare mode)
 * - `opened`: openDownload through the guarded agent, the body discarded
 * - `metered`: and through the Meter (its count and SHA-256)
 * - `written`: and written to a temp file as the store writes it (writeBatched, with its
 *   background fdatasync every 8 MB), not fsynced at the end, then removed
 * - `stored`: the local store's write, as the probe's worker mode (fsync, rename, directory fsync)
 */
import { open, unlink } from 'node:fs/promises';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { createGuardedAgent } from '../src/download/guarded-agent.js';
import { Meter, openDownload } from '../src/download/open-download.js';
import { createLocalAudioStore } from '../src/storage/local/local-audio-store.js';
import { tempName } from '../src/storage/temp-name.js';
import { writeBatched } from '../src/storage/local/write-batched.js';

export const PARTS = ['bare', 'opened', 'metered', 'written', 'stored'] as const;
export type Part = (typeof PARTS)[number];

interface PartsRequest {
  readonly urls: string[];
  readonly origin: string;
  readonly ca: string;
  readonly dir: string;
  readonly part: Part;
}

async function run(request_: PartsRequest) {
  const { part, dir } = request_;
  const agent = createGuardedAgent({
    allowPrivateIps: true,
    ca: request_.ca,
    connectTimeoutMs: 10_000,
    headersTimeoutMs: 30_000,
    bodyIdleTimeoutMs: 30_000,
  });
  const store = await createLocalAudioStore(dir);
  const maxBytes = 1_000_000_000;
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  for (const [i, url] of request_.urls.entries()) {
    if (part === 'bare') {
      const res = await request(url, { dispatcher: agent });
      for await (const _chunk of res.body) {
        // discard
      }
      continue;
    }
    const opened = await openDownload(url, {
      allowedOrigins: [request_.origin],
      dispatcher: agent,
      maxBytes,
      signal: AbortSignal.timeout(600_000),
    });
    const meter = new Meter(maxBytes);
    const source = part === 'opened' ? opened.body : meter.measure(opened.body);
    if (part === 'opened' || part === 'metered') {
      for await (const _chunk of source) {
        // discard
      }
    } else if (part === 'written') {
      const path = join(dir, tempName());
      const handle = await open(path, 'wx', 0o644);
      await writeBatched(handle, source, (error) => error as Error);
      await handle.close();
      await unlink(path);
    } else {
      const name = `${i}.bin`;
      await store.write(name, source, { id: name });
    }
    if (part !== 'opened') meter.sha256();
  }
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  await agent.close();
  rmSync(dir, { recursive: true, force: true });
  return { seconds, cpu: (cpu.user + cpu.system) / 1e6 };
}

// Forked by bench/pair.ts, which imports PARTS from here too.
if (process.send !== undefined)
  process.once('message', (message: PartsRequest) => {
    run(message).then(
      (result) => process.send?.(result, () => process.exit(0)),
      (error: unknown) => {
        process.stderr.write(`download-parts failed: ${String(error)}\n`);
        process.exit(1);
      },
    );
  });
