import { pino } from 'pino';
import { parseSettings, SETTINGS } from '../settings.js';
import { createLogger } from '../telemetry/logger.js';
import { startSandbox } from '../sandbox/start-sandbox.js';
import { SANDBOX_SETTINGS, sandboxConfig } from '../sandbox/sandbox-settings.js';
import { UsageError } from './cli-errors.js';
import type { Output } from './print.js';

/** The sandbox's flags, from its settings table: `--cdn-port` sets SANDBOX_CDN_PORT. */
export const SANDBOX_FLAGS: readonly string[] = Object.values(SANDBOX_SETTINGS).flatMap((spec) =>
  'flag' in spec ? [spec.flag] : [],
);

/**
 * `audio-webhooks sandbox`: runs the provider's stand-in until SIGTERM/SIGINT. Standard output
 * carries exactly sandbox.json's content, on one line; logs and the how-to go to standard error.
 */
export async function runSandbox(
  flags: Readonly<Record<string, string | boolean | undefined>>,
  env: NodeJS.ProcessEnv,
  output: Output,
  errors: Output,
): Promise<number> {
  const fromFlags: Record<string, string> = {};
  for (const [name, spec] of Object.entries(SANDBOX_SETTINGS)) {
    const value = 'flag' in spec ? flags[spec.flag] : undefined;
    if (typeof value === 'string') fromFlags[name] = value;
  }
  const settings = parseSettings(SANDBOX_SETTINGS, { ...env, ...fromFlags });
  // The service's settings the sandbox reads (Redis, secrets, log level) without the service's
  // cross-checks: QUEUE_PREFIX is not the sandbox's (its own prefix is checked in sandboxConfig).
  const service = parseSettings(SETTINGS, env, { forCli: true });
  const config = sandboxConfig(settings, service);
  if ('error' in config) throw new UsageError(config.error);
  const level = service.logLevel;
  const logger = createLogger(level, pino.destination({ fd: 2, sync: true }));
  const sandbox = await startSandbox(config, logger);
  const { info } = sandbox;
  // Listened for before the lines that say it is ready: a signal sent on reading them is a
  // graceful stop, not the default action.
  const stopAsked = new Promise<void>((resolve) => {
    process.once('SIGTERM', () => {
      resolve();
    });
    process.once('SIGINT', () => {
      resolve();
    });
  });
  output.out(`${JSON.stringify(info)}\n`);
  errors.out(
    [
      `sandbox ready: API ${info.api}, CDN ${info.cdn}; deliveries go to ${config.webhookUrl}`,
      `start the receiver with the same WEBHOOK_SECRETS and:`,
      `  CDN_URL=${info.cdn}`,
      `  DOWNLOAD_CA_FILE=${info.ca}`,
      `  DOWNLOAD_ALLOW_PRIVATE_IPS=true   # the sandbox CDN is on a local address`,
      `then: curl -X POST ${info.api}/v1/tts/batch -H 'Authorization: Bearer ${info.key.token}' \\`,
      `        -H 'Content-Type: application/json' -d '{"items":[{"text":"hello","voice":"alloy"}]}'`,
      '',
    ].join('\n'),
  );
  await stopAsked;
  await sandbox.close();
  return 0;
}
