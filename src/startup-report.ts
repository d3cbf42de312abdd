import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from './settings.js';
import { redisTarget } from './redis/connections.js';
import { PLACEHOLDER_SECRETS } from './config/receiver-settings.js';
import { quietSdkNodeNotice } from './storage/s3/s3-client.js';

export function packageVersion(): string {
  try {
    const text = readFileSync(join(__dirname, '..', 'package.json'), 'utf8');
    return (JSON.parse(text) as { version?: string }).version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

export interface StartupFacts {
  /** Where the receiver listens, once it does. */
  readonly listen?: string;
  /** Where INTERNAL_PORT's metrics and dashboard listen, when set. */
  readonly internal?: string;
  /** The .env file read, if any. */
  readonly dotenv?: string | undefined;
  /** What src/custom/ gave: event names, hook names, whether a store. Absent: nothing. */
  readonly custom?: {
    readonly events: string[];
    readonly hooks: string[];
    readonly store: boolean;
  };
}

/**
 * One line that says what this process is and where everything goes, so an operator reading the
 * log of a misbehaving pod needs nothing else; then a warning for each risky setting.
 */
export function reportStartup(config: Config, logger: Logger, facts: StartupFacts): void {
  const web = config.role !== 'worker';
  const worker = config.role !== 'web';
  if (web && config.webhookSecrets.some((s) => PLACEHOLDER_SECRETS.includes(s))) {
    logger.warn(
      'WEBHOOK_SECRETS holds an example secret: anyone can sign deliveries; set the secret from the provider dashboard',
    );
  }
  // On loopback any ADMIN_PASSWORD is served, a short one warned of; elsewhere config.ts refuses
  // one under 16 characters.
  if (web && config.adminPassword !== undefined && config.adminPassword.length < 12) {
    logger.warn(
      'ADMIN_PASSWORD is shorter than 12 characters: the dashboard is easy to guess into; use a long random one',
    );
  }
  if (worker && config.cdnOrigins.length === 0) {
    logger.warn('CDN_URL is empty: every audio.ready download will be refused');
  }
  if (worker && config.downloadAllowPrivateIps) {
    logger.warn(
      'DOWNLOAD_ALLOW_PRIVATE_IPS=true: downloads may reach loopback and private addresses (local development only)',
    );
  }
  const sdkNotice = worker && config.audioStore === 's3' ? quietSdkNodeNotice() : undefined;
  if (sdkNotice !== undefined) {
    logger.warn(`AUDIO_STORE=s3 on ${sdkNotice} (the Docker image runs 24)`);
  }
  logger.info(
    {
      version: packageVersion(),
      role: config.role,
      redis: redisTarget(config),
      queuePrefix: config.queuePrefix,
      ...(facts.dotenv === undefined ? {} : { dotenv: facts.dotenv }),
      // Named, so a file added under src/custom/ that did not load is seen at once.
      ...(facts.custom === undefined ? {} : { custom: facts.custom }),
      ...(web
        ? {
            listen: facts.listen,
            ...(facts.internal === undefined ? {} : { internal: facts.internal }),
            webhookPath: config.webhookPath,
            toleranceSeconds: config.signatureToleranceSeconds,
            secrets: config.webhookSecrets.length,
          }
        : {}),
      ...(worker
        ? {
            cdnOrigins: config.cdnOrigins,
            ...(config.audioStore === 's3'
              ? {
                  store: 's3',
                  bucket: config.s3Bucket,
                  prefix: config.s3Prefix,
                  endpoint: config.s3Endpoint ?? 'AWS',
                }
              : { store: 'local', audioDir: config.audioDir }),
            concurrency: config.workerConcurrency,
            attempts: config.downloadAttempts,
          }
        : {}),
    },
    'audio-webhooks started',
  );
}
