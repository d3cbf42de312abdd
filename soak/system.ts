import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SETTINGS } from '../src/settings.js';
import { freePort } from '../harness/private-redis.js';
import { startSandboxProcess, type SandboxProcess } from '../harness/sandbox-process.js';
import type { SoakOptions } from './args.js';
import { childPids } from './child-pids.js';
import { forwardingEnv } from './destinations-config.js';
import { startFaultCdn, type FaultCdn } from './fault-cdn.js';
import { startHttpDestination, type HttpDestination } from './http-destination.js';
import { startNatsBroker, type NatsBroker } from './nats-broker.js';
import { startRabbitDestination, type RabbitDestination } from './rabbit-destination.js';
import { startRedisCluster, type RedisCluster } from './redis-cluster.js';
import { startRedisServer, type RedisServer } from './redis-server.js';
import { copyService } from './service-copy.js';
import { serviceProcess, type ServiceProcess } from './service-process.js';
import { startStore, type SoakStore } from './soak-store.js';

/**
 * The whole system, as production runs it, on this machine: a Redis of its own (append-only; or
 * a Cluster of three primaries with a replica each, `--redis cluster`), the receiver as a cluster
 * of WEB_CONCURRENCY=2 processes, two worker processes (two pods: one AUDIO_DIR, or one bucket),
 * forwarding to an HTTP endpoint, a JetStream stream and a RabbitMQ queue, the archive on; the
 * provider's sandbox (with a Redis of its own, never faulted) sending. Everything is started here and stopped by `shutdown`, in reverse, whatever failed.
 */
export interface Restarts {
  receiver_processes_replaced: number;
  workers: number;
  redis: number;
  nats: number;
  /** Exits nobody asked for (each restarted): a finding, not a fault. */
  readonly unplanned: string[];
}

/** The service's Redis: one server (the default), or a Cluster (`--redis cluster`). */
export type ServiceRedis =
  | { readonly kind: 'single'; readonly server: RedisServer }
  | { readonly kind: 'cluster'; readonly cluster: RedisCluster };

export interface System {
  readonly serviceRedis: ServiceRedis;
  readonly sandbox: SandboxProcess;
  readonly cdn: FaultCdn;
  readonly http: HttpDestination;
  readonly nats: NatsBroker;
  readonly rabbit: RabbitDestination;
  readonly store: SoakStore;
  readonly receiver: ServiceProcess;
  readonly workers: readonly ServiceProcess[];
  /** The service's environment (the CLI's too). */
  readonly env: Readonly<Record<string, string>>;
  /** True when the service reads FORWARD_CONFIG, so the AMQP destination's filter applies. */
  readonly filterActive: boolean;
  readonly restarts: Restarts;
  /** The receiver's processes (the cluster primary's children). */
  receiverPids(): number[];
  /** Settings the soak changed from the service's defaults, and why, for the report. */
  readonly overrides: Readonly<Record<string, string>>;
  shutdown(): Promise<void>;
}

export const RECEIVER_STARTED = 'audio-webhooks started';
export const RECEIVER_REPLACED = 'receiver process died; replacing it';
const SECRETS = 'soak-signing-secret-1,soak-signing-secret-2';
/** How many unplanned restarts of one process before the soak stops restarting it. */
const MAX_UNPLANNED = 20;

/**
 * The settings compressed like the sender's schedule; everything else is the service's default.
 * Not DOWNLOAD_BACKOFF_MS: the CDN's faults last as long as in life, so the downloads' retry
 * budget must too (at 1000, seed 3902's back-to-back CDN faults outlasted its 8 attempts).
 */
function overridesFor(options: SoakOptions): Record<string, string> {
  return {
    WORKER_LOCK_MS: '5000',
    FORWARD_BACKOFF_MS: '1000',
    FORWARD_PROBE_SECONDS: String(options.probeSeconds),
    SHUTDOWN_TIMEOUT_MS: '10000',
    // On a Cluster: the queue over two shards per primary, and no 2xx before the delivery is on
    // the replica that takes over when its primary dies (the promise the Cluster soak checks).
    ...(options.redis === 'cluster'
      ? { QUEUE_PREFIX: `{${CLUSTER_PREFIX_TAG}}`, QUEUE_SHARDS: '6', REDIS_WAIT_REPLICAS: '1' }
      : {}),
  };
}

const CLUSTER_PREFIX_TAG = 'audio-webhooks';

/** The service's Redis, started, and what tells the service where it is. */
async function startServiceRedis(
  options: SoakOptions,
  dir: string,
): Promise<{ redis: ServiceRedis; env: Record<string, string>; close: () => Promise<void> }> {
  if (options.redis === 'cluster') {
    const cluster = await startRedisCluster(dir, options.fsync);
    return {
      redis: { kind: 'cluster', cluster },
      env: { REDIS_CLUSTER_NODES: cluster.seeds },
      close: () => cluster.kill(),
    };
  }
  const server = await startRedisServer(dir, options.fsync);
  return {
    redis: { kind: 'single', server },
    env: { REDIS_URL: server.url },
    close: () => server.kill(),
  };
}

export async function startSystem(
  options: SoakOptions,
  dirs: { readonly work: string; readonly logs: string },
  storeBytes: number,
  say: (line: string) => void,
): Promise<System> {
  const closers: { name: string; close: () => Promise<unknown> }[] = [];
  const shutdown = async () => {
    for (const { name, close } of closers.splice(0).reverse()) {
      await Promise.race([close(), sleep(30_000)]).catch((error: unknown) => {
        say(`soak: stopping ${name} failed: ${String(error)}`);
      });
    }
  };
  try {
    mkdirSync(dirs.logs, { recursive: true });
    say(`soak: starting the service's Redis (${options.redis})`);
    const started = await startServiceRedis(options, mkdir(dirs.work, 'redis'));
    const serviceRedis = started.redis;
    closers.push({ name: 'redis', close: started.close });
    const sandboxRedis = await startRedisServer(mkdir(dirs.work, 'sandbox-redis'), 'none');
    closers.push({ name: 'sandbox redis', close: () => sandboxRedis.kill() });
    say(`soak: starting the ${options.store} store`);
    const store = await startStore(options.store, mkdir(dirs.work, 'store'), storeBytes);
    closers.push({ name: 'store', close: () => store.close() });
    const [cdn, http, nats, rabbit] = await Promise.all([
      startFaultCdn(options.seed),
      startHttpDestination(),
      startNatsBroker(mkdir(dirs.work, 'nats')),
      startRabbitDestination(),
    ]);
    closers.push({ name: 'cdn', close: () => cdn.close() });
    closers.push({ name: 'http destination', close: () => http.close() });
    closers.push({ name: 'nats', close: () => nats.close() });
    closers.push({ name: 'rabbitmq destination', close: () => rabbit.close() });

    const port = await freePort();
    const sandbox = await startSandboxProcess({
      dir: mkdir(dirs.work, 'sandbox'),
      prefix: 'soak',
      flags: {
        'time-scale': String(options.timeScale),
        'webhook-url': `http://127.0.0.1:${port}/webhooks`,
      },
      env: { REDIS_URL: sandboxRedis.url, WEBHOOK_SECRETS: SECRETS },
    });
    closers.push({ name: 'sandbox', close: () => sandbox.stop() });

    const caFile = join(dirs.work, 'cdn-ca.pem');
    writeFileSync(caFile, `${readFileSync(sandbox.info.ca, 'utf8')}\n${cdn.ca}\n`);
    const filterActive = 'FORWARD_CONFIG' in SETTINGS;
    const overrides = overridesFor(options);
    const env: Record<string, string> = {
      WEBHOOK_SECRETS: SECRETS,
      ...started.env,
      HOST: '127.0.0.1',
      PORT: String(port),
      CDN_URL: `${cdn.origin},${sandbox.info.cdn}`,
      DOWNLOAD_CA_FILE: caFile,
      DOWNLOAD_ALLOW_PRIVATE_IPS: 'true',
      LOG_LEVEL: 'info',
      ...store.env,
      ...forwardingEnv(
        { http: http.url, nats: nats.url, amqp: rabbit.url },
        http.secret,
        join(dirs.work, 'forward-config.json'),
        filterActive,
      ),
      ...overrides,
    };
    const main = copyService(join(dirs.work, 'service'));
    const cwd = join(dirs.work, 'service');
    const restarts: Restarts = {
      receiver_processes_replaced: 0,
      workers: 0,
      redis: 0,
      nats: 0,
      unplanned: [],
    };
    const unplanned = (process: () => ServiceProcess, name: string) => {
      let times = 0;
      return (code: number | null, signal: string | null) => {
        restarts.unplanned.push(
          `${new Date().toISOString()} ${name} exited on its own (code ${String(code)}, signal ${String(signal)})`,
        );
        say(`soak: ${name} exited on its own (code ${String(code)}, signal ${String(signal)})`);
        times += 1;
        if (times > MAX_UNPLANNED) return;
        void sleep(1000)
          .then(() => process().start())
          .catch((error: unknown) => {
            say(`soak: restarting ${name} failed: ${String(error)}`);
          });
      };
    };
    const receiver: ServiceProcess = serviceProcess({
      name: 'receiver',
      main,
      cwd,
      env: { ...env, ROLE: 'web', WEB_CONCURRENCY: '2' },
      log: join(dirs.logs, 'receiver.log'),
      ready: RECEIVER_STARTED,
      counted: [RECEIVER_REPLACED],
      onUnplannedExit: unplanned(() => receiver, 'the receiver (cluster primary)'),
    });
    closers.push({ name: 'receiver', close: () => receiver.stop('SIGTERM') });
    const workers: ServiceProcess[] = [0, 1].map((n) => {
      const worker: ServiceProcess = serviceProcess({
        name: `worker-${n}`,
        main,
        cwd,
        env: { ...env, ROLE: 'worker' },
        log: join(dirs.logs, `worker-${n}.log`),
        ready: RECEIVER_STARTED,
        onUnplannedExit: unplanned(() => worker, `worker-${n}`),
      });
      return worker;
    });
    for (const worker of workers)
      closers.push({ name: worker.name, close: () => worker.stop('SIGTERM') });
    say('soak: starting the receiver and two workers');
    await Promise.all([receiver.start(), ...workers.map((worker) => worker.start())]);
    const receiverPids = () => {
      const primary = receiver.pid();
      return primary === undefined ? [] : childPids(primary);
    };
    for (let i = 0; i < 100 && receiverPids().length < 2; i += 1) await sleep(100);
    return {
      serviceRedis,
      sandbox,
      cdn,
      http,
      nats,
      rabbit,
      store,
      receiver,
      workers,
      env,
      filterActive,
      restarts,
      receiverPids,
      overrides,
      shutdown,
    };
  } catch (error: unknown) {
    await shutdown();
    throw error;
  }
}

function mkdir(parent: string, name: string): string {
  const dir = join(parent, name);
  mkdirSync(dir, { recursive: true });
  return dir;
}
