import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../harness/private-redis.js';
import { startSandboxProcess } from '../harness/sandbox-process.js';
import { charactersForBytes } from '../src/sandbox/audio/synthesize-wav.js';
import { BENCH_SECRET, spawnWholeService, stop, watchSettledJobs } from './lib.js';

export interface SandboxEndToEndResult {
  readonly items: number;
  readonly wavBytes: number;
  /** From the batch POST until the last job completed (metadata is written before that). */
  readonly seconds: number;
  readonly itemsPerSecond: number;
  /** How long the sandbox took to render the batch and answer 202. */
  readonly submitSeconds: number;
  /** When the last delivery was answered 2xx, from the batch POST: the provider's side. */
  readonly deliveredSeconds: number;
  readonly audioFiles: number;
  readonly metadataFiles: number;
  readonly failedJobs: number;
  /** Delivery attempts the sandbox logged per delivery; 1.00 is ideal. */
  readonly attemptsPerDelivery: number;
  readonly notDelivered: number;
}

/**
 * The provider's whole loop on one machine: a 10,000-item batch (64 KB WAVs) submitted to the
 * sandbox, delivered with its real signatures and retry engine (time scale 1: a failed attempt
 * would cost 30 s, so attempts per delivery tells the truth) to the service (a receiver and a
 * worker process, as docker-compose.yml runs them), which
 * downloads every file from the sandbox's HTTPS CDN.
 */
export async function runSandboxEndToEnd(
  redisUrl: string,
  items = 10_000,
): Promise<SandboxEndToEndResult> {
  const port = await freePort();
  const sandbox = await startSandboxProcess({
    flags: { 'webhook-url': `http://127.0.0.1:${port}/webhooks` },
    env: { WEBHOOK_SECRETS: BENCH_SECRET, REDIS_URL: redisUrl },
    prefix: 'bench-sandbox',
  });
  const audioDir = mkdtempSync(join(tmpdir(), 'aw-bench-sandbox-'));
  const prefix = 'bench-sandbox-e2e';
  const service = await spawnWholeService(port, redisUrl, prefix, audioDir, {
    CDN_URL: sandbox.info.cdn,
    DOWNLOAD_CA_FILE: sandbox.info.ca,
  });
  const jobs = await watchSettledJobs(redisUrl, prefix, items);

  const length = charactersForBytes(64 * 1024);
  const batch = Array.from({ length: items }, (_unused, i) => ({
    id: `bench-${i}`,
    text: `${i} `.padEnd(length, 'abcdefghij').slice(0, length),
    voice: 'alloy',
  }));
  process.stderr.write(`sandbox end to end: ${items} items, 64 KB WAVs\n`);
  const startedAt = Date.now();
  const started = performance.now();
  const answer = await sandbox.call(
    'POST',
    '/v1/tts/batch',
    { items: batch },
    sandbox.info.key.token,
  );
  const submitSeconds = (performance.now() - started) / 1000;
  if (answer.status !== 202) throw new Error(`batch answered ${answer.status}`);
  await jobs.done;
  const seconds = (performance.now() - started) / 1000;
  await jobs.close();

  const deliveries = (await sandbox.call('GET', '/sandbox/deliveries')).body as {
    state: string;
    attempts: { at: number; ms: number }[];
  }[];
  const lastAnswer = Math.max(...deliveries.flatMap((d) => d.attempts.map((a) => a.at + a.ms)));
  await Promise.all(service.map(stop));
  await sandbox.stop();
  const files = readdirSync(audioDir);
  // Gone before the next run: their dirty pages would otherwise be written back during it.
  rmSync(audioDir, { recursive: true, force: true });
  const attempts = deliveries.reduce((sum, d) => sum + d.attempts.length, 0);
  return {
    items,
    wavBytes: 44 + length * 0.08 * 16_000 * 2,
    seconds: Math.round(seconds * 100) / 100,
    itemsPerSecond: Math.round(items / seconds),
    submitSeconds: Math.round(submitSeconds * 100) / 100,
    deliveredSeconds: Math.round((lastAnswer - startedAt) / 10) / 100,
    audioFiles: files.filter((f) => f.endsWith('.wav')).length,
    metadataFiles: files.filter((f) => f.endsWith('.json')).length,
    failedJobs: jobs.failed(),
    attemptsPerDelivery: Math.round((attempts / Math.max(1, deliveries.length)) * 100) / 100,
    notDelivered: deliveries.filter((d) => d.state !== 'delivered').length,
  };
}
