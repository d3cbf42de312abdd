import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import { ArchiveWriteError, startArchiving } from '../../src/archive/archive';
import type { AudioStore } from '../../src/storage/audio-store';
import { createLocalFileArea } from '../../src/storage/local/local-file-area';

it('a line that cannot be made fails its wait, after the handling, logged and counted: not before it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'aw-archiver-'));
  const registry = new Registry();
  const store = { files: createLocalFileArea(dir) } as unknown as AudioStore;
  const archiver = startArchiving({ archiveRetentionHours: 1 }, store, pino({ level: 'silent' }), [
    registry,
  ]);
  try {
    // A receipt time that is no time: its hour folder cannot be named.
    const line = archiver?.record({
      delivery: { event: 'audio.failed', data: { id: 'x' } },
      jobId: 'job-x',
      receivedAt: 'not a time',
      replay: false,
    });
    await expect(line?.written()).rejects.toThrow(ArchiveWriteError);
    expect(await registry.getSingleMetricAsString('webhook_archive_writes_total')).toContain(
      'webhook_archive_writes_total{result="failed"} 1',
    );
  } finally {
    archiver?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
