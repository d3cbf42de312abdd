import { bool, int, optionalPath, origins } from './parsers.js';
import type { ParsedSettings, SettingSpec } from './setting-spec.js';

/** A worker's downloads: what it may fetch, what it trusts, and how long and how often it tries. */
export const DOWNLOAD_SETTINGS = {
  CDN_URL: {
    schema: origins,
    key: 'cdnOrigins',
    readBy: ['worker', 'cli'],
    doc: 'comma-separated origins (`https://host[:port]`) `audio_url` may point to; nothing else is fetched',
  },
  DOWNLOAD_ALLOW_PRIVATE_IPS: {
    schema: bool,
    default: 'false',
    readBy: ['worker'],
    doc: '`true` lets downloads reach loopback/private addresses (local development and tests only)',
  },
  DOWNLOAD_CA_FILE: {
    schema: optionalPath,
    readBy: ['worker'],
    doc: 'a PEM file of extra CA certificates downloads trust (a staging CDN, the sandbox)',
  },
  DOWNLOAD_MAX_BYTES: {
    schema: int(1),
    default: '104857600',
    readBy: ['worker'],
    doc: 'larger audio is refused (after decoding, when the CDN compressed it)',
  },
  DOWNLOAD_TIMEOUT_MS: {
    schema: int(1),
    default: '60000',
    readBy: ['worker'],
    doc: 'whole-download deadline',
  },
  DOWNLOAD_ATTEMPTS: {
    schema: int(1, 100),
    default: '8',
    readBy: ['worker'],
    doc: 'attempts per job, the first included',
  },
  DOWNLOAD_BACKOFF_MS: {
    schema: int(1),
    default: '2000',
    readBy: ['worker'],
    doc: 'first retry delay; doubles per attempt, with jitter',
  },
} as const satisfies Record<string, SettingSpec>;

/** The download settings, as parsed: what a worker's downloader and its job policy read. */
export type DownloadSettings = ParsedSettings<typeof DOWNLOAD_SETTINGS>;
