import { ConfigError, loadConfig, type Config } from './config.js';
import { serve } from './http/serve.js';
import { createLogger } from './logger.js';
import { createReceiver } from './receiver.js';
import { shutdown, type ShutdownStep } from './shutdown.js';
import { startWorkers } from './workers/start-workers.js';
import type { Logger } from 'pino';

/**
 * Composition root: config, logger, then the HTTP receiver and/or the workers per ROLE, and the
 * shutdown order. Nothing else in src/ reads process.env or installs signal handlers.
 */
async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error: unknown) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
  const logger = createLogger(config.logLevel);
  let shuttingDown = false;

  const web =
    config.role === 'worker' ? undefined : await startWeb(config, logger, () => shuttingDown);
  const workers = config.role === 'web' ? undefined : await startWorkers(config, logger);
  // Stop intake first, then let active jobs finish, then close the receiver's Redis connection.
  const steps: ShutdownStep[] = [
    ...(web ? [{ name: 'http', run: () => web.server.close() }] : []),
    ...(workers ? [{ name: 'workers', run: () => workers.close() }] : []),
    ...(web ? [{ name: 'redis', run: () => web.receiver.close() }] : []),
  ];

  const onSignal = (signal: NodeJS.Signals) => {
    if (shuttingDown) return;
    shuttingDown = true;
    logger.info({ signal }, 'shutting down');
    void shutdown(steps, config.shutdownTimeoutMs, logger).then((code) => process.exit(code));
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
}

async function startWeb(config: Config, logger: Logger, isShuttingDown: () => boolean) {
  const receiver = createReceiver(config, logger, isShuttingDown);
  const server = await serve(receiver.app, config.port, config.host);
  logger.info({ port: server.port, path: config.webhookPath }, 'receiver listening');
  return { receiver, server };
}

main().catch((error: unknown) => {
  process.stderr.write(
    `fatal: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
