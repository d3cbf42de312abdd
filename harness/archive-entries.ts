import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { hourFolder } from '../src/archive/archive';
import { fileStem } from '../src/storage/file-name';

/**
 * Every entry under an archive folder (`<AUDIO_DIR>/.archive`), parsed, oldest first, read
 * straight from the files rather than through the archive's own reader: a file per entry
 * (`.json`) and a line per entry in segments and batches (`.ndjson`). Unparsable text throws.
 */
export function archivedEntries(dir: string): Record<string, unknown>[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((path) => statSync(join(dir, path)).isFile())
    .flatMap((path) => {
      const text = readFileSync(join(dir, path), 'utf8');
      if (path.endsWith('.json')) return [text];
      if (path.endsWith('.ndjson')) return text.split('\n').filter((line) => line !== '');
      return [];
    })
    .map((text) => JSON.parse(text) as Record<string, unknown>)
    .sort((a, b) => String(a.received_at).localeCompare(String(b.received_at)));
}

/**
 * The path at which versions before the batches wrote an entry file (`<hour>/<stem>/<time>_<job
 * id>.json`, still read), for tests of that reading. `jobId` must be plain (letters, digits, `-`).
 */
export function entryFilePath(receivedAt: string, jobId: string, id: string): string {
  const compact = new Date(receivedAt).toISOString().replace(/[-:.]/g, '');
  return `${hourFolder(receivedAt)}${fileStem(id)}/${compact}_${jobId}.json`;
}
