import { Counter, Histogram, type Registry } from 'prom-client';
import type { AudioStore } from '../storage/audio-store.js';

/** What the downloader counts (worker/download-audio.ts). */
export interface DownloadMetrics {
  /** By `result`: stored, already_stored (nothing fetched), transient, permanent. */
  readonly downloads: Counter<'result'>;
  /** Bytes fetched from the CDN, a failed transfer's included. */
  readonly downloadBytes: Counter;
}

/** What the audio store's writes are measured by (worker/dispatch.ts). */
export interface StoreWriteMetrics {
  /** By `result`: ok, failed. */
  readonly storeWrites: Counter<'result'>;
  readonly storeWriteSeconds: Histogram;
}

/** The delivery worker's own metrics: on its registry, and the receiver's with ROLE=all. */
export interface WorkerMetrics extends DownloadMetrics, StoreWriteMetrics {
  /**
   * Labelled `event` (the job's name: a built-in or a declared custom event) and `outcome`
   * (jobs/start-job-worker.ts's RunOutcome).
   */
  readonly jobSeconds: Histogram<'event' | 'outcome'>;
}

/** Seconds, from a job that finds its audio stored (milliseconds) to a slow large download. */
const RUN_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

export function createWorkerMetrics(registries: readonly Registry[]): WorkerMetrics {
  const registers = [...registries];
  const downloads = new Counter({
    name: 'webhook_downloads_total',
    help: 'Audio downloads by result: stored, already_stored (found whole in the store, nothing fetched), transient (will be retried) or permanent (the job fails)',
    labelNames: ['result'],
    registers,
  });
  const storeWrites = new Counter({
    name: 'webhook_store_writes_total',
    help: 'Writes of downloaded audio to the audio store (with its metadata when the store writes both at once), by result: ok or failed',
    labelNames: ['result'],
    registers,
  });
  // Every series exists from the start, so a rate() has a baseline before the first failure.
  for (const result of ['stored', 'already_stored', 'transient', 'permanent'])
    downloads.inc({ result }, 0);
  for (const result of ['ok', 'failed']) storeWrites.inc({ result }, 0);
  return {
    jobSeconds: new Histogram({
      name: 'webhook_job_duration_seconds',
      help: 'Runs of delivery jobs in the worker, in seconds, by event and outcome: completed, retrying (failed, will run again) or failed (for good)',
      labelNames: ['event', 'outcome'],
      buckets: RUN_BUCKETS,
      registers,
    }),
    downloads,
    downloadBytes: new Counter({
      name: 'webhook_download_bytes_total',
      help: 'Bytes of audio fetched from the CDN (failed transfers included)',
      registers,
    }),
    storeWrites,
    storeWriteSeconds: new Histogram({
      name: 'webhook_store_write_duration_seconds',
      help: 'Time of a write of downloaded audio to the audio store, in seconds: the audio streams from the CDN into it, so this includes the transfer',
      buckets: RUN_BUCKETS,
      registers,
    }),
  };
}

/**
 * The store, its writes of audio (`write`, `writeWithMetadata`) counted and timed. A Proxy, not a
 * copy: a fork's store may be a class whose methods need their own `this`, and what AudioStore
 * gains later passes through untouched.
 */
export function measureWrites(store: AudioStore, metrics: StoreWriteMetrics): AudioStore {
  const measured =
    <Args extends unknown[]>(write: (...args: Args) => Promise<void>) =>
    async (...args: Args) => {
      const end = metrics.storeWriteSeconds.startTimer();
      try {
        await write(...args);
        metrics.storeWrites.inc({ result: 'ok' });
      } catch (error: unknown) {
        metrics.storeWrites.inc({ result: 'failed' });
        throw error;
      } finally {
        end();
      }
    };
  const write = measured(store.write.bind(store));
  const withMetadata = store.writeWithMetadata && measured(store.writeWithMetadata.bind(store));
  return new Proxy(store, {
    get(target, key) {
      if (key === 'write') return write;
      if (key === 'writeWithMetadata') return withMetadata;
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function'
        ? (value as (...args: unknown[]) => unknown).bind(target)
        : value;
    },
  });
}
