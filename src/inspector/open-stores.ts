import type { Logger } from 'pino';
import { createArchive, type Archive } from '../archive/archive.js';
import { fileAreaOf, type AudioStore } from '../storage/audio-store.js';

/**
 * The store the inspector reads (the archive for payloads and replays, the stored audio), opened
 * read-only the first time a page needs it, then kept: the web role opens no store otherwise.
 * One that cannot be opened is logged, read as none (the pages say the payload is gone, the
 * audio route answers 404), and tried again the next time. The archive is none when
 * ARCHIVE_RETENTION_HOURS is 0 or the store keeps none.
 */
export function inspectorStores(
  archiveRetentionHours: number,
  logger: Logger,
  openStore: () => Promise<AudioStore>,
): {
  readonly store: () => Promise<AudioStore | undefined>;
  readonly archive: () => Promise<Archive | undefined>;
} {
  let opened: Promise<AudioStore | undefined> | undefined;
  const store = () =>
    (opened ??= openStore().catch((error: unknown) => {
      logger.warn(
        { err: error },
        'the inspector cannot open the audio store: payloads and audio not shown',
      );
      opened = undefined;
      return undefined;
    }));
  let archive: Archive | undefined;
  return {
    store,
    archive: async () => {
      if (archiveRetentionHours === 0) return undefined;
      const opened = await store();
      const area = opened === undefined ? undefined : fileAreaOf(opened);
      if (area !== undefined) archive ??= createArchive(area);
      return archive;
    },
  };
}
