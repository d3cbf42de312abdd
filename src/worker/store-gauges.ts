import { statfs } from 'node:fs/promises';
import { Gauge, type Registry } from 'prom-client';
import { withDeadline } from '../util/deadline.js';

/** A hung mount (an NFS server gone) never answers statfs: the scrape keeps the last values. */
const STATFS_DEADLINE_MS = 2_000;

/**
 * The local store's filesystem (AUDIO_DIR), from ONE statfs per scrape shared by both gauges: a
 * full disk fails every download (a StorageError, retried until space is freed). Free is what an
 * unprivileged process may still write (`bavail`, not `bfree`). A failed read keeps the last
 * values; before the first answer the gauges are absent, not 0. Every process that reads it
 * reads the same filesystem: aggregated by `max`.
 */
export function registerStoreGauges(registries: readonly Registry[], dir: string): void {
  let inFlight: Promise<{ free: number; size: number } | undefined> | undefined;
  const read = () =>
    (inFlight ??= withDeadline(statfs(dir), STATFS_DEADLINE_MS, `statfs of AUDIO_DIR ${dir}`)
      .then((stats) => ({ free: stats.bavail * stats.bsize, size: stats.blocks * stats.bsize }))
      .catch(() => undefined)
      .finally(() => {
        inFlight = undefined;
      }));
  const gauge = (name: string, help: string, field: 'free' | 'size') => {
    new Gauge({
      name,
      help,
      registers: [...registries],
      aggregator: 'max',
      async collect() {
        const stats = await read();
        if (stats !== undefined) this.set(stats[field]);
      },
    }).remove();
  };
  gauge(
    'webhook_store_free_bytes',
    "Bytes still free for the service in AUDIO_DIR's filesystem (statfs at scrape; local store only)",
    'free',
  );
  gauge(
    'webhook_store_size_bytes',
    "Size in bytes of AUDIO_DIR's filesystem (statfs at scrape; local store only)",
    'size',
  );
}
