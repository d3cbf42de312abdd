import { cpusInQuota } from '../util/cpu-quota.js';
import { autoOrInt, int } from './parsers.js';
import type { ParsedSettings, SettingSpec } from './setting-spec.js';

/** How much runs at once (processes, jobs), how long a job is held, and how long a stop may take. */
export const PROCESS_SETTINGS = {
  WEB_CONCURRENCY: {
    schema: autoOrInt(cpusInQuota, 1, 256),
    default: 'auto',
    readBy: ['web'],
    doc: "receiver processes sharing the port with ROLE=web (node:cluster); auto: the CPUs in the container's quota",
  },
  WORKER_CONCURRENCY: {
    schema: int(1, 1000),
    default: '8',
    readBy: ['worker'],
    doc: 'jobs processed at once per worker process',
  },
  WORKER_LOCK_MS: {
    schema: int(1000),
    default: '30000',
    readBy: ['worker'],
    doc: "job lock; a crashed worker's job is taken over after about this long",
  },
  SHUTDOWN_TIMEOUT_MS: {
    schema: int(0),
    default: '25000',
    readBy: ['web', 'worker'],
    doc: 'graceful shutdown deadline after SIGTERM/SIGINT',
  },
} as const satisfies Record<string, SettingSpec>;

/** The process settings, as parsed: how much runs at once, how long a job is held, a stop's deadline. */
export type ProcessSettings = ParsedSettings<typeof PROCESS_SETTINGS>;
