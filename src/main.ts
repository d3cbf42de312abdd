import cluster from 'node:cluster';
import { ConfigError, loadConfig, SETTINGS } from './settings.js';
import { unknownVariables, unknownVariableWarning } from './config/variable-names.js';
import { PROVIDER_SETTINGS } from './provider/provider-settings.js';
import { SANDBOX_SETTINGS } from './sandbox/sandbox-settings.js';
import type { ReceiverSettings } from './config/receiver-settings.js';
import { loadCustom } from './load-custom.js';
import { ListenError, serve, type RunningServer } from './http-server/serve.js';
import { loadDotEnv } from './load-dotenv.js';
import { createLogger } from './telemetry/logger.js';
import { createReceiver, type ReceiverOptions, type WebSettings } from './receiver/receiver.js';
import { shutdown, type ShutdownStep } from './shutdown.js';
import { packageVersion, reportStartup } from './startup-report.js';
import { startTracing } from './telemetry/tracing.js';
import { hearPrimary, runReceiverCluster, START_REFUSED_EXIT_CODE } from './receiver/cluster.js';
import { StorageError } from './storage/storage-errors.js';
import { createAudioStore } from './storage/create-audio-store.js';
import { startWorkers } from './worker/start-workers.js';
import { serveWorkerHealth } from './worker/health-server.js';
import { CaFileError } from './download/download-agent.js';
import type { Logger } from 'pino';
import { readyWithin } from './redis/connections.js';
import { checkEvictionPolicy, EvictionPolicyError } from './redis/redis-memory.js';
import { checkShardCount, ShardCountError } from './queue/shard-count.js';
import { DeadlineError } from './util/deadline.js';
import { EventDefinitionError } from './hooks/custom-events.js';

/**
 * Composition root: .env, config, logger, then the HTTP receiver and/or the workers per ROLE (with
 * the team's own hooks, events and store from src/custom/, when there), and the shutdown order. Nothing else in src/
 * reads process.env or installs signal handlers.
 */
async function main(): Promise<void> {
  // A cluster's receiver process hears its primary before anything else: a stop asked while it
  // starts is kept, and carried out once it is up.
  const onPrimaryAsked = cluster.isWorker ? hearPrimary() : undefined;
  const dotenv = loadDotEnv();
  const config = loadConfig();
  const logger = createLogger(config.logLevel, undefined, config.logFormat);
  // Once per start: a cluster's receiver processes read the same environment.
  if (cluster.isPrimary) warnUnknownVariables(logger);
  await checkEvictionPolicy(config, POLICY_CHECK_MS);
  await checkShardCount(config, POLICY_CHECK_MS, (reason) => {
    logger.warn(reason);
  });
  // Loaded before a cluster forks too: a custom event that cannot be served stops the start here.
  const custom = loadCustom();
  if (config.role === 'web' && config.webConcurrency > 1 && cluster.isPrimary) {
    runReceiverCluster(config, logger);
    return;
  }
  let shuttingDown = false;

  // The fork's store (src/custom/store.ts) when there is one, else AUDIO_STORE's: the web side's
  // inspector reads the archive from it, the workers write to it.
  const openStore = (writable: boolean) =>
    createAudioStore(config, { custom: custom.createStore, logger, writable });
  const tracing =
    config.otelEndpoint === undefined
      ? undefined
      : await startTracing(config.otelEndpoint, { role: config.role, version: packageVersion() });
  const web =
    config.role === 'worker'
      ? undefined
      : await startWeb(config, logger, {
          isShuttingDown: () => shuttingDown,
          telemetry: tracing?.telemetry,
          inCluster: cluster.isWorker,
          customEvents: custom.events,
          openStore: () => openStore(false),
        });
  const workers =
    config.role === 'web'
      ? undefined
      : await startWorkers(config, logger, {
          hooks: custom.hooks,
          customEvents: custom.events,
          store: await openStore(true),
          telemetry: tracing?.telemetry,
          alsoRegisterOn: web?.receiver.metrics.registry,
        });
  const workerHealth =
    workers === undefined || config.workerHealthPort === undefined
      ? undefined
      : await serveWorkerHealth(
          { liveness: workers.liveness, registry: workers.registry, logger },
          config.workerHealthPort,
          config.host,
        );
  const internal = web?.internal;

  // Stop intake first, then let active jobs finish, then close the receiver's Redis connection.
  const steps: ShutdownStep[] = [
    ...(web ? [{ name: 'http', run: () => web.server.close() }] : []),
    ...(internal ? [{ name: 'internal http', run: () => internal.close() }] : []),
    ...(workers ? [{ name: 'workers', run: () => workers.close() }] : []),
    ...(workerHealth ? [{ name: 'worker health', run: () => workerHealth.close() }] : []),
    ...(web ? [{ name: 'redis', run: () => web.receiver.close() }] : []),
    ...(tracing ? [{ name: 'traces', run: () => tracing.shutdown() }] : []),
  ];
  const onSignal = (signal: NodeJS.Signals | 'primary') => {
    if (shuttingDown) {
      // In a cluster the primary decides when to force (a group-wide signal reaches us too).
      if (cluster.isWorker) return;
      // The operator asked twice: they want it gone now. Cut-off jobs are re-run elsewhere.
      logger.warn({ signal }, 'second signal: exiting now without waiting');
      process.exit(1);
    }
    shuttingDown = true;
    logger.info({ signal, timeoutMs: config.shutdownTimeoutMs }, 'shutting down');
    void shutdown(steps, config.shutdownTimeoutMs, logger).then((code) => process.exit(code));
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  // Said once a signal is listened for: one sent on reading this line is a graceful stop.
  const loaded = {
    events: [...custom.events.keys()],
    hooks: Object.keys(custom.hooks),
    store: custom.createStore !== undefined,
  };
  reportStartup(config, logger, {
    dotenv,
    ...(loaded.events.length + loaded.hooks.length > 0 || loaded.store ? { custom: loaded } : {}),
    ...(web ? { listen: `${config.host}:${web.server.port}` } : {}),
    ...(internal ? { internal: `${config.host}:${internal.port}` } : {}),
  });
  onPrimaryAsked?.(() => {
    onSignal('primary');
  });
}

/** The receiver and its listeners: PORT's, and INTERNAL_PORT's when set. */
async function startWeb(
  config: WebSettings & Pick<ReceiverSettings, 'port' | 'host' | 'maxConnections'>,
  logger: Logger,
  options: ReceiverOptions,
) {
  const receiver = createReceiver(config, logger, options);
  // In a cluster, the port is already answered by the other processes: join them once Redis is
  // ready (or after 2 s, then answering 503 as a lone process does), so the first
  // deliveries after a start do not meet a 503 from a process still connecting.
  if (cluster.isWorker) await readyWithin(receiver.redis, CLUSTER_READY_WAIT_MS);
  const servers: RunningServer[] = [];
  try {
    const { maxConnections } = config;
    servers.push(await serve(receiver.listener, config.port, config.host, { maxConnections }));
    if (receiver.internal !== undefined && config.internalPort !== undefined)
      servers.push(
        await serve(receiver.internal, config.internalPort, config.host, {
          portName: 'INTERNAL_PORT',
          maxConnections,
        }),
      );
  } catch (error: unknown) {
    await Promise.all(servers.map((server) => server.close()));
    await receiver.close();
    throw error;
  }
  const [server, internal] = servers as [RunningServer, RunningServer?];
  return { receiver, server, internal };
}

/**
 * A warning line for each variable that starts like a setting (REDIS_, ADMIN_, …) but is none,
 * of any role: a slip such as REDIS_URLS would otherwise leave REDIS_URL at its default unseen.
 */
function warnUnknownVariables(logger: Logger): void {
  const known = new Set(
    [SETTINGS, PROVIDER_SETTINGS, SANDBOX_SETTINGS].flatMap((table) => Object.keys(table)),
  );
  for (const unknown of unknownVariables(process.env, known))
    logger.warn({ variable: unknown.name }, unknownVariableWarning(unknown));
}

const CLUSTER_READY_WAIT_MS = 2_000;
/** How long the start-up check of Redis's eviction policy waits for Redis before leaving it to the running check. */
const POLICY_CHECK_MS = 2_000;

/**
 * Errors an operator fixes by changing a setting, or a start-up wait that ran out (its message
 * names what it waited on): the message says which; no stack helps.
 */
const SETTING_ERRORS = [
  ConfigError,
  ListenError,
  StorageError,
  CaFileError,
  EventDefinitionError,
  DeadlineError,
  EvictionPolicyError,
  ShardCountError,
];

main().catch((error: unknown) => {
  const known = SETTING_ERRORS.some((kind) => error instanceof kind);
  const text =
    error instanceof Error
      ? known
        ? error.message
        : (error.stack ?? error.message)
      : String(error);
  process.stderr.write(`audio-webhooks: ${known ? '' : 'fatal: '}${text}\n`);
  // A cluster's receiver process tells its primary that a restart would be refused the same way.
  process.exit(known && cluster.isWorker ? START_REFUSED_EXIT_CODE : 1);
});
