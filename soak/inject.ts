import { setTimeout as sleep } from 'node:timers/promises';
import type { PlannedFault } from './fault-plan.js';
import { forwardStatus } from './forward-status.js';
import type { RedisServer } from './redis-server.js';
import type { System } from './system.js';

/**
 * One fault, injected and then undone: what it did, for the report. Each injector restores what
 * it broke in a `finally`, so a run that stops early leaves nothing broken behind.
 */
export interface InjectedFault {
  readonly kind: string;
  readonly target: string;
  /** Epoch ms the fault began and ended (its window, for the latency split). */
  readonly startMs: number;
  readonly endMs: number;
  readonly details: Readonly<Record<string, unknown>>;
}

export async function inject(fault: PlannedFault, system: System): Promise<InjectedFault> {
  const startMs = Date.now();
  const details: Record<string, unknown> = {};
  let kind: string = fault.kind;
  const hold = () => sleep(fault.durationMs);
  switch (fault.kind) {
    case 'kill_receiver': {
      const pids = system.receiverPids();
      const pid = pids[fault.which % Math.max(1, pids.length)];
      if (pid === undefined) {
        details.skipped = 'no receiver process to kill';
        break;
      }
      process.kill(pid, 'SIGKILL');
      details.pid = pid;
      // Replaced by the cluster primary (at once, or after its backoff for early deaths).
      for (let i = 0; i < 600; i += 1) {
        const now = system.receiverPids();
        if (now.length >= 2 && !now.includes(pid)) break;
        await sleep(100);
      }
      details.replaced_after_ms = Date.now() - startMs;
      break;
    }
    case 'kill_worker': {
      const worker = system.workers[fault.which % system.workers.length];
      if (worker === undefined || !worker.running()) {
        details.skipped = 'the worker was not running';
        break;
      }
      details.worker = worker.name;
      details.pid = worker.pid();
      await worker.stop('SIGKILL');
      try {
        await hold();
      } finally {
        system.restarts.workers += 1;
        // A start that fails (a worker refuses to start on a full disk) is the orchestrator's
        // to repeat: the process's unplanned-exit handler restarts it; the kill stands.
        await worker.start().catch((error: unknown) => {
          details.restart_failed = error instanceof Error ? error.message : String(error);
        });
      }
      break;
    }
    case 'kill_redis': {
      const server = single(system);
      details.pid = server.pid();
      await server.kill();
      try {
        await hold();
      } finally {
        await server.start();
        system.restarts.redis += 1;
      }
      break;
    }
    case 'pause_redis': {
      const server = single(system);
      server.pause();
      try {
        await hold();
      } finally {
        server.resume();
      }
      break;
    }
    case 'kill_primary':
    case 'pause_primary':
      await breakPrimary(fault, system, details);
      break;
    case 'nats_stopped':
      await stopNats(system, hold);
      break;
    case 'rabbit_exchange_removed':
      try {
        await system.rabbit.removeExchange();
        await hold();
      } finally {
        await system.rabbit.restoreExchange();
      }
      break;
    case 'http_503':
    case 'http_429':
    case 'http_hang':
      system.http.retryAfterS = 1 + (fault.which % 5);
      system.http.mode =
        fault.kind === 'http_503' ? '503' : fault.kind === 'http_429' ? '429' : 'hang';
      if (fault.kind === 'http_429') details.retry_after_s = system.http.retryAfterS;
      try {
        await hold();
      } finally {
        system.http.mode = 'normal';
        system.http.release();
      }
      break;
    case 'cdn_failing':
    case 'cdn_slow':
    case 'cdn_truncating':
      system.cdn.mode =
        fault.kind === 'cdn_failing'
          ? 'failing'
          : fault.kind === 'cdn_slow'
            ? 'slow'
            : 'truncating';
      try {
        await hold();
      } finally {
        system.cdn.mode = 'normal';
      }
      break;
    case 'store_full':
      kind = system.store.faultKind;
      try {
        await system.store.faultOn();
        await hold();
      } finally {
        await system.store.faultOff();
      }
      break;
    case 'destination_paused':
      details.destination = fault.target;
      await destinationDown(system, fault, details);
      break;
  }
  return { kind, target: fault.target, startMs, endMs: Date.now(), details };
}

function single(system: System): RedisServer {
  const redis = system.serviceRedis;
  if (redis.kind !== 'single') throw new Error('a fault of the one Redis, on a Cluster');
  return redis.server;
}

/**
 * A primary of the Cluster SIGKILLed, or SIGSTOPped, while traffic flows. A kill is held until
 * its replica has taken its slots, then for the fault's duration; the node is then started again
 * (from its own files: it rejoins as a replica). A pause lasts the fault's duration whatever the
 * Cluster does meanwhile. Either ends once the Cluster is whole again (every primary with a
 * synced replica), so the next fault never finds a primary without one.
 */
async function breakPrimary(
  fault: PlannedFault,
  system: System,
  details: Record<string, unknown>,
): Promise<void> {
  const redis = system.serviceRedis;
  if (redis.kind !== 'cluster') throw new Error(`${fault.kind} needs --redis cluster`);
  const { cluster } = redis;
  const began = Date.now();
  const primaries = await cluster.primaries();
  const victim = primaries[fault.which % primaries.length];
  const server = cluster.nodes.find((node) => node.port === victim?.port);
  if (victim === undefined || server === undefined) throw new Error('no primary to break');
  details.port = victim.port;
  details.pid = server.pid();
  details.slots = victim.slots.map(([from, to]) => `${String(from)}-${String(to)}`).join(',');
  try {
    if (fault.kind === 'kill_primary') {
      await server.kill();
      const now = await cluster.failedOver(victim, 60_000);
      details.failed_over_after_ms = Date.now() - began;
      details.primaries_after = now.map((node) => node.port);
      await sleep(fault.durationMs);
    } else {
      server.pause();
      await sleep(fault.durationMs);
    }
  } finally {
    if (fault.kind === 'kill_primary') {
      await server.start();
      system.restarts.redis += 1;
    } else server.resume();
    await cluster.whole(120_000);
    details.whole_after_ms = Date.now() - began;
    details.role_after = await cluster.roleOf(victim.port);
  }
}

async function stopNats(system: System, hold: () => Promise<unknown>): Promise<void> {
  await system.nats.stop();
  try {
    await hold();
  } finally {
    await system.nats.start();
    system.restarts.nats += 1;
  }
}

/**
 * A destination down for long: connections cut (HTTP), the server stopped (NATS), the exchange
 * gone (AMQP). Near its end the soak asks `forward status --json` whether the service paused it
 * (FORWARD_PAUSE_AFTER failures in a row); a build without pausing says so there.
 */
async function destinationDown(
  system: System,
  fault: PlannedFault,
  details: Record<string, unknown>,
): Promise<void> {
  const observe = async () => {
    await sleep(Math.max(0, fault.durationMs - 4_000));
    details.state_seen = await forwardStatus(system.env, fault.target);
  };
  switch (fault.target) {
    case 'nats':
      await stopNats(system, observe);
      return;
    case 'amqp':
      try {
        await system.rabbit.removeExchange();
        await observe();
      } finally {
        await system.rabbit.restoreExchange();
      }
      return;
    default:
      system.http.mode = 'down';
      try {
        await observe();
      } finally {
        system.http.mode = 'normal';
      }
  }
}
