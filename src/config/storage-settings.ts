import { z } from 'zod';
import { bool, int } from './parsers.js';
import type { ParsedSettings, SettingSpec } from './setting-spec.js';

/**
 * The audio store (local files or an S3 bucket) and the archive of deliveries kept in it. The web
 * role reads the store's settings too: the delivery inspector shows archived payloads and replays
 * from the archive (read-only, and only with ADMIN_PASSWORD set).
 */
export const STORAGE_SETTINGS = {
  AUDIO_DIR: {
    schema: z.string(),
    default: './data/audio',
    readBy: ['web', 'worker', 'cli'],
    doc: 'where downloaded audio lands; must be writable (checked at start); the CLI keeps its TTS cache bodies in the store, under `.archive/tts-cache/`',
  },
  AUDIO_STORE: {
    schema: z.enum(['local', 's3'], 'must be local or s3'),
    default: 'local',
    readBy: ['web', 'worker', 'cli'],
    doc: '`local`: files under AUDIO_DIR; `s3`: objects in an S3-compatible bucket (S3_*), credentials from the AWS SDK default chain',
  },
  S3_BUCKET: {
    schema: z.string().optional(),
    readBy: ['web', 'worker', 'cli'],
    doc: 'the bucket, required with AUDIO_STORE=s3 (checked at start with HeadBucket)',
  },
  S3_PREFIX: {
    schema: z
      .string()
      .regex(/^[^\\]*$/, 'must not hold a backslash')
      // `audio` would also take in another app's `audio-backup/…` when listing or cleaning up.
      .regex(/(^|\/)$/, 'must end with / (e.g. audio/), so its keys are apart from other keys')
      .optional()
      .transform((prefix) => prefix ?? ''),
    readBy: ['web', 'worker', 'cli'],
    doc: 'prepended to every object key, e.g. `audio/`; must end with `/`; unset: none',
  },
  S3_ENDPOINT: {
    schema: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional(),
    readBy: ['web', 'worker', 'cli'],
    doc: 'the endpoint of an S3-compatible store (Ceph RGW, MinIO, R2…); unset: AWS',
  },
  S3_REGION: {
    schema: z.string().min(1),
    default: 'us-east-1',
    readBy: ['web', 'worker', 'cli'],
    doc: "the bucket's region",
  },
  S3_FORCE_PATH_STYLE: {
    schema: bool,
    default: 'false',
    readBy: ['web', 'worker', 'cli'],
    doc: '`true`: path-style addressing (most self-hosted stores)',
  },
  ARCHIVE_RETENTION_HOURS: {
    schema: int(0, 24 * 365 * 10),
    default: '168',
    readBy: ['web', 'worker', 'cli'],
    doc: 'every accepted delivery is archived in the audio store (`.archive/`) for this long, for `replay` (and the inspector keeps each delivery’s timeline as long); `0`: no archive',
  },
} as const satisfies Record<string, SettingSpec>;

/** The store's settings, as parsed: what opens the store and keeps the archive. */
export type StorageSettings = ParsedSettings<typeof STORAGE_SETTINGS>;
