import { z } from 'zod';
import { DOWNLOAD_SETTINGS } from './download-settings.js';
import { FORWARD_SETTINGS } from './forward-settings.js';
import { OPERATIONS_SETTINGS } from './operations-settings.js';
import { PROCESS_SETTINGS } from './process-settings.js';
import { RECEIVER_SETTINGS } from './receiver-settings.js';
import { REDIS_SETTINGS } from './redis-settings.js';
import type { SettingSpec } from './setting-spec.js';
import { STORAGE_SETTINGS } from './storage-settings.js';

export { SENDER_RETRY_WINDOW_SECONDS } from './redis-settings.js';
export type { Reader, SettingSpec } from './setting-spec.js';

/**
 * EVERY SETTING, DECLARED ONCE. The Config type follows from this table; a test checks that
 * .env.example and docs/configuration.md's table name the same variables with the same
 * defaults and readers. Add a setting to its area's file (<area>-settings.ts) and those two
 * tell you where else to write it.
 *
 * The order here is the order of those two documents (the test compares it), so ROLE and the
 * tracing endpoint, which belong to no one area, are declared in their places below. A name
 * must appear in one area only: a spread that repeats it would silently replace the first.
 */
export const SETTINGS = {
  ...RECEIVER_SETTINGS,
  ...REDIS_SETTINGS,
  ROLE: {
    schema: z.enum(['web', 'worker', 'all'], 'must be web, worker or all'),
    default: 'all',
    readBy: ['web', 'worker'],
    doc: '`web` (HTTP only), `worker` (workers only) or `all`',
  },
  ...STORAGE_SETTINGS,
  ...DOWNLOAD_SETTINGS,
  ...PROCESS_SETTINGS,
  ...OPERATIONS_SETTINGS,
  ...FORWARD_SETTINGS,
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    schema: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
    key: 'otelEndpoint',
    readBy: ['web', 'worker'],
    doc: 'OTLP/HTTP collector base URL (traces go to /v1/traces); unset: tracing off',
  },
} as const satisfies Record<string, SettingSpec>;

export type SettingName = keyof typeof SETTINGS;
