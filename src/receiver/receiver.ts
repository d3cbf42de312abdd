import type { RequestListener } from 'node:http';
import type { Telemetry } from 'bullmq';
import express, { type Express } from 'express';
import type { Logger } from 'pino';
import type { OperationsSettings } from '../config/operations-settings.js';
import type { ReceiverSettings } from '../config/receiver-settings.js';
import type { RedisSettings } from '../config/redis-settings.js';
import type { StorageSettings } from '../config/storage-settings.js';
import { MethodNotAllowedError } from '../http-server/http-errors.js';
import { errorHandler, notFound } from '../http-server/error-handler.js';
import { createDeliveryQueues, type DeliveryQueue } from '../queue/delivery-queue.js';
import { createQueueDelivery } from './enqueue-delivery.js';
import {
  createWebRedis,
  redisTarget,
  topologyOf,
  type RedisConfig,
  type RedisConnection,
} from '../redis/connections.js';
import { watchRedis } from '../redis/watch-redis.js';
import { deliveryTimeline, timelineTtlMs } from '../history/delivery-timeline.js';
import { WriteGate } from '../redis/write-gate.js';
import { createMetrics, type Metrics } from '../telemetry/metrics.js';
import { registerHoldGauge } from '../telemetry/redis-gauges.js';
import { boundedQueueReads } from '../jobs/queue-readers.js';
import { NO_CUSTOM_EVENTS, type CustomEvents } from '../hooks/custom-events.js';
import type { DashboardOptions } from './admin-dashboard.js';
import { inspectorStores } from '../inspector/open-stores.js';
import { EVENT_NAMES } from '../provider-spec/events.js';
import type { AudioStore } from '../storage/audio-store.js';
import { openBuiltInStore, type StoreSettings } from '../storage/create-audio-store.js';
import { clusterMetricsText } from './cluster-metrics.js';
import { applyCommonMiddleware, webhookFastPath } from './common-middleware.js';
import { adminHosts } from './admin-hosts.js';
import { healthRoutes } from './health-routes.js';
import { webhookRoute, type PlainHandler, type WebhookRouteDeps } from './webhook-route.js';

/**
 * What the receiver reads: its connection, WAIT and the write gate's reserve, the route's, the
 * mark's and timeline's lifetimes, the dashboard's, the inspector's and its archive's store.
 */
export type WebSettings = RedisConfig &
  Pick<RedisSettings, 'redisWaitReplicas' | 'redisWaitTimeoutMs' | 'redisMemoryReservePercent'> &
  Pick<RedisSettings, 'queuePrefix' | 'queueShards' | 'dedupeTtlSeconds'> &
  WebhookRouteDeps['config'] &
  Pick<ReceiverSettings, 'internalPort'> &
  Pick<OperationsSettings, 'trustProxy' | 'adminPassword' | 'adminReadOnly' | 'adminHosts'> &
  Pick<StorageSettings, 'archiveRetentionHours'> &
  StoreSettings &
  DashboardOptions['inspector']['forwarding'];

export interface Receiver {
  /** What PORT's server runs: the webhook's fast path in front of `app`. */
  readonly listener: RequestListener;
  /** The Express app behind `listener` (the path's other spellings, probes, and so on). */
  readonly app: Express;
  /** What INTERNAL_PORT serves (metrics, dashboard, probes); absent when it is unset. */
  readonly internal?: Express;
  readonly queue: DeliveryQueue;
  /** The fail-fast connection the queue and /readyz share. */
  readonly redis: RedisConnection;
  readonly metrics: Metrics;
  /** Closes the queue and the Redis connection (after the HTTP server has stopped). */
  close(): Promise<void>;
}

export interface ReceiverOptions {
  /**
   * True once shutdown began: /readyz answers 503 so the load balancer stops sending.
   * @defaultValue never
   */
  readonly isShuttingDown?: () => boolean;
  /** bullmq-otel, when tracing is on. @defaultValue none */
  readonly telemetry?: Telemetry | undefined;
  /** A process of a WEB_CONCURRENCY cluster: /metrics sums every process. @defaultValue false */
  readonly inCluster?: boolean;
  /** The fork's own events (src/custom/events.ts). @defaultValue none */
  readonly customEvents?: CustomEvents;
  /**
   * Opens the store the inspector reads the archive from, read-only: main.ts's opens the fork's
   * (src/custom/store.ts) when there is one. @defaultValue the one AUDIO_STORE chooses
   */
  readonly openStore?: (() => Promise<AudioStore>) | undefined;
}
/** The doors an app serves: one port for all, or the public and internal apart. */
type Surface = 'all' | 'public' | 'internal';

/**
 * The HTTP half as ROLE=web runs it: the Redis connection, the queue's shards, the metrics,
 * the HTTP stack. It does not wait for Redis: deliveries get 503 and /readyz says not ready
 * until the connection is up (on its own).
 *
 * `listener` sends a POST to exactly WEBHOOK_PATH straight to the webhook handler and all else
 * through `app` (webhookFastPath, receiver/common-middleware.ts).
 */
export function createReceiver(
  config: WebSettings,
  logger: Logger,
  {
    isShuttingDown = () => false,
    telemetry,
    inCluster = false,
    customEvents = NO_CUSTOM_EVENTS,
    openStore = () => openBuiltInStore(config, false),
  }: ReceiverOptions = {},
): Receiver {
  const redis = createWebRedis(config);
  watchRedis(redis, logger, 'web', redisTarget(config));
  const gate = new WriteGate(redis, {
    logger,
    name: 'web',
    probeKey: `${config.queuePrefix}:write-probe`,
    reservePercent: config.redisMemoryReservePercent,
  }).start();
  const queues = createDeliveryQueues({
    connection: redis,
    prefix: config.queuePrefix,
    shards: config.queueShards,
    wait: config,
    telemetry,
    onError: (error) => {
      logger.debug({ err: error }, 'queue error');
    },
  });
  const [queue] = queues;
  // Read only when /metrics is scraped: a delivery's path does none of it.
  const metrics = createMetrics({
    ...boundedQueueReads(queues, redis),
    redis,
  });
  registerHoldGauge([metrics.registry], () => gate.holding);
  const timeline = deliveryTimeline(redis, queue.layout.placeOf, timelineTtlMs(config));
  const webhook = webhookRoute({
    config,
    logger,
    metrics,
    customEvents,
    queueDelivery: createQueueDelivery(queues, redis, config, gate, timeline),
  });
  const { registry } = metrics;
  const metricsText = inCluster ? clusterMetricsText(registry) : () => registry.metrics();
  const parts: AppParts = {
    config,
    logger,
    redis,
    gate,
    webhook,
    isShuttingDown,
    metrics: { contentType: registry.contentType, text: metricsText },
    dashboard: dashboardOptions(config, queues, redis, logger, {
      timeline,
      dedupeTtlSeconds: config.dedupeTtlSeconds,
      events: [...EVENT_NAMES, ...customEvents.keys()],
      ...inspectorStores(config.archiveRetentionHours, logger, openStore),
      forwarding: config,
    }),
  };
  const split = config.internalPort !== undefined;
  const app = buildApp(parts, split ? 'public' : 'all');
  return {
    app,
    listener: webhookFastPath(config.webhookPath, logger, webhook, app),
    ...(split ? { internal: buildApp(parts, 'internal') } : {}),
    queue,
    redis,
    metrics,
    async close() {
      gate.stop();
      await Promise.all(queues.map((shard) => shard.close()));
      // quit() needs a live connection; during an outage there is nothing left to flush.
      await redis.quit().catch(() => {
        redis.disconnect();
      });
    },
  };
}

interface AppParts {
  readonly config: RedisConfig & Pick<WebSettings, 'trustProxy' | 'webhookPath' | 'adminHosts'>;
  readonly logger: Logger;
  readonly redis: RedisConnection;
  readonly gate: WriteGate;
  readonly webhook: PlainHandler;
  readonly isShuttingDown: () => boolean;
  readonly metrics: { readonly contentType: string; readonly text: () => Promise<string> };
  readonly dashboard: DashboardOptions | undefined;
}

function buildApp(parts: AppParts, surface: Surface): Express {
  const { config, logger, redis, webhook } = parts;
  const app = express();
  app.set('trust proxy', surface === 'internal' ? false : config.trustProxy);
  applyCommonMiddleware(app, logger);
  app.use(adminHosts(config.adminHosts, { everyPath: surface === 'internal' }));
  if (surface !== 'internal') {
    // The hot path first: a delivery does not walk past the probes' and the dashboard's routes.
    app.post(config.webhookPath, webhook);
    app.all(config.webhookPath, () => {
      throw new MethodNotAllowedError('POST');
    });
  }
  app.use(
    healthRoutes({
      redis,
      gate: parts.gate,
      isShuttingDown: parts.isShuttingDown,
      topology: topologyOf(config),
      namePrimary: surface === 'internal',
      ...(surface === 'public' ? {} : { metrics: parts.metrics }),
    }),
  );
  if (parts.dashboard !== undefined && surface !== 'public')
    app.use(loadDashboard()(parts.dashboard));
  app.use(notFound);
  app.use(errorHandler(logger));
  return app;
}

function dashboardOptions(
  config: Pick<WebSettings, 'adminPassword' | 'adminReadOnly' | 'adminHosts' | 'queuePrefix'>,
  queues: readonly [DeliveryQueue, ...DeliveryQueue[]],
  redis: RedisConnection,
  logger: Logger,
  inspector: DashboardOptions['inspector'],
): DashboardOptions | undefined {
  if (config.adminPassword === undefined) return undefined;
  return {
    inspector,
    password: config.adminPassword,
    readOnly: config.adminReadOnly,
    hosts: config.adminHosts,
    queues,
    redis,
    prefix: config.queuePrefix,
    logger,
  };
}

/**
 * bull-board is loaded only when the dashboard is on, since importing it slows every receiver
 * process's start; by require, as the build is CommonJS and import() would make building the app
 * asynchronous for one optional route.
 */
function loadDashboard(): typeof import('./admin-dashboard.js').adminDashboard {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- deferred on purpose (above)
  return (require('./admin-dashboard.js') as typeof import('./admin-dashboard.js')).adminDashboard;
}
