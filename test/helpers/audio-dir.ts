import { readdirSync } from 'node:fs';
import { ARCHIVE_FOLDER } from '../../src/storage/audio-store';

/**
 * The names in an AUDIO_DIR, sorted, without the replay archive's folder (which the workers write
 * beside the audio unless ARCHIVE_RETENTION_HOURS=0). Temp files (`.partial…`) are kept: tests
 * assert that none is left.
 */
export function audioDirEntries(dir: string): string[] {
  return readdirSync(dir)
    .filter((name) => name !== ARCHIVE_FOLDER)
    .sort();
}
