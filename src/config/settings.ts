import { z } from 'zod';
import { DOWNLOAD_SETTINGS } from './download-settings.js';
import { OPERATIONS_SETTINGS } from './operations-settings.js';
import { PROCESS_SETTINGS } from './process-settings.js';
import { RECEIVER_SETTINGS } from './receiver-settings.js';
import { REDIS_SETTINGS } from './redis-settings.js';
import type { ParsedSettings, SettingSpec } from './setting-spec.js';
import { STORAGE_SETTINGS } from './storage-settings.js';

export { SENDER_RETRY_WINDOW_SECONDS } from './redis-settings.js';
export type { Reader, SettingSpec } from './setting-spec.js';

/**
 * The settings every role reads, declared once each; src/settings.ts puts them together with
 * forwarding's (forwarding/settings/) into the service's one table, SETTINGS. Add a setting to
 * its area's file (<area>-settings.ts).
 *
 * The order here is the order of .env.example and docs/configuration.md (a test compares it),
 * so ROLE, which belongs to no one area, is declared in its place below, and the tracing
 * endpoint follows forwarding's settings in TRACING_SETTINGS.
 */
export const SHARED_SETTINGS = {
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
} as const satisfies Record<string, SettingSpec>;

/** Tracing: read by every role, and last in the documents. */
export const TRACING_SETTINGS = {
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    schema: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
    key: 'otelEndpoint',
    readBy: ['web', 'worker'],
    doc: 'OTLP/HTTP collector base URL (traces go to /v1/traces); unset: tracing off',
  },
} as const satisfies Record<string, SettingSpec>;

/** The fields of SHARED_SETTINGS and TRACING_SETTINGS, as parsed. */
export type SharedSettings = ParsedSettings<typeof SHARED_SETTINGS & typeof TRACING_SETTINGS>;
