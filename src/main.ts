import { createApp } from './app.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { serve } from './http/serve.js';
import { createLogger } from './logger.js';
import { createMetrics } from './metrics.js';
import { createDeliveryQueue } from './queue/delivery-queue.js';
import { createWebRedis } from './queue/redis-connections.js';
import { watchRedis } from './queue/watch-redis.js';
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
  const steps: ShutdownStep[] = [];
  let shuttingDown = false;

  if (config.role !== 'worker') steps.push(...(await startWeb(config, logger, () => shuttingDown)));
  if (config.role !== 'web') {
    const workers = await startWorkers(config, logger);
    // After the HTTP step: deliveries still arriving are stored; then active jobs finish.
    steps.splice(1, 0, { name: 'workers', run: () => workers.close() });
  }

  const onSignal = (signal: NodeJS.Signals) => {
    if (shuttingDown) return;
    shuttingDown = true;
    logger.info({ signal }, 'shutting down');
    void shutdown(steps, config.shutdownTimeoutMs, logger).then((code) => process.exit(code));
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
}

async function startWeb(
  config: Config,
  logger: Logger,
  isShuttingDown: () => boolean,
): Promise<ShutdownStep[]> {
  // Start-up does not wait for Redis: the receiver answers 503 and /readyz says not ready until
  // the connection is up, and it comes up on its own when Redis returns.
  const redis = createWebRedis(config.redisUrl);
  watchRedis(redis, logger, 'web');
  const queue = createDeliveryQueue({
    connection: redis,
    prefix: config.queuePrefix,
    attempts: config.downloadAttempts,
    backoffMs: config.downloadBackoffMs,
  });
  queue.on('error', (error: unknown) => {
    logger.debug({ err: error }, 'queue error');
  });
  const metrics = createMetrics(queue);
  const app = createApp({ config, logger, queue, redis, metrics, isShuttingDown });
  const running = await serve(app, config.port, config.host);
  logger.info({ port: running.port, path: config.webhookPath }, 'receiver listening');
  return [
    { name: 'http', run: () => running.close() },
    { name: 'queue', run: () => queue.close() },
    {
      name: 'redis',
      run: async () => {
        await redis.quit();
      },
    },
  ];
}

main().catch((error: unknown) => {
  process.stderr.write(
    `fatal: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
