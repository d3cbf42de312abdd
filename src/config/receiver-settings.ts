import { z } from 'zod';
import { int, secrets } from './parsers.js';
import type { SettingSpec } from './setting-spec.js';

/** The HTTP receiver: where it listens, and what a delivery must be for it to be accepted. */
export const RECEIVER_SETTINGS = {
  WEBHOOK_SECRETS: {
    schema: secrets,
    required: true,
    readBy: ['web', 'cli', 'sandbox'],
    doc: 'comma-separated signing secrets; any one verifies a delivery (rotation)',
  },
  PORT: { schema: int(0, 65535), default: '3000', readBy: ['web', 'cli'], doc: 'HTTP port' },
  INTERNAL_PORT: {
    schema: int(1, 65535).optional(),
    readBy: ['web'],
    doc: 'when set, /metrics and /admin/queues are served only on this port (same HOST) and 404 on PORT; /healthz and /readyz on both',
  },
  HOST: {
    schema: z.string(),
    default: '0.0.0.0',
    readBy: ['web', 'worker'],
    doc: "HTTP listen address (also the worker's WORKER_HEALTH_PORT)",
  },
  WEBHOOK_PATH: {
    schema: z.string().regex(/^\/[\w\-./]*$/, 'must be a path such as /webhooks'),
    default: '/webhooks',
    readBy: ['web', 'cli'],
    doc: 'path of the receiving endpoint',
  },
  SIGNATURE_TOLERANCE_SECONDS: {
    schema: int(1, 86_400),
    default: '300',
    readBy: ['web'],
    doc: 'max |now − t|, in both directions',
  },
  MAX_BODY_BYTES: {
    schema: int(1, 100 * 1024 * 1024),
    default: '1048576',
    readBy: ['web'],
    doc: 'larger bodies get 413',
  },
} as const satisfies Record<string, SettingSpec>;
