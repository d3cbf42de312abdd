import type { Job } from 'bullmq';
import type { Config } from '../settings.js';
import { destinationControl } from '../forwarding/destination-control.js';
import { knownDestinations } from '../forwarding/destination-roster.js';
import { createForwardQueue, type ForwardJobData } from '../forwarding/forward-queue.js';
import type { RedisConnection } from '../redis/connections.js';
import { UsageError } from './cli-errors.js';
import { printRows, type Output } from './print.js';

/** Jobs `forward status` reads at the most, oldest first per state, to count what waits. */
export const STATUS_SCAN = 5_000;
const PAGE = 500;

/**
 * `forward status | pause <name> | resume <name>`: the destinations' shared state
 * (forwarding/destination-control.ts), read or changed for every worker at once. The destinations
 * are the ones the workers announce in Redis (forwarding/destination-roster.ts) and this shell's
 * own FORWARD_URLS and FORWARD_CONFIG: the CLI is often run where neither is set.
 */
export async function forwardControlCommand(
  sub: 'status' | 'pause' | 'resume',
  name: string | undefined,
  json: boolean,
  config: Config,
  redis: RedisConnection,
  output: Output,
): Promise<number> {
  const destinations = await knownDestinations(config, redis, config.queuePrefix);
  const names = destinations.map((d) => d.name);
  const control = destinationControl(redis, config.queuePrefix, names, {
    pauseAfter: config.forwardPauseAfter,
    probeMs: config.forwardProbeSeconds * 1000,
  });
  if (sub !== 'status') {
    if (name === undefined) throw new UsageError(`forward ${sub} takes a destination's name`);
    if (!names.includes(name)) {
      throw new UsageError(
        `no forward destination is named ${name} (forward status lists them: ${names.join(', ') || 'none'})`,
      );
    }
    const changed = await (sub === 'pause' ? control.pause(name) : control.resume(name));
    const now = sub === 'pause' ? 'paused' : 'active';
    output.out(`${name}: ${changed ? `now ${now}` : `already ${now}`}\n`);
    return 0;
  }
  if (name !== undefined) throw new UsageError('forward status takes no name');
  const [ticks, pending] = await Promise.all([control.tick(false), pendingByName(config, redis)]);
  const now = Date.now();
  const rows = destinations.map((destination, index) => {
    const status = ticks[index]?.status;
    const mine = pending.byName.get(destination.name);
    const oldest = Math.min(mine?.oldest ?? Infinity, status?.oldestHeldAt ?? Infinity);
    return {
      name: destination.name,
      kind: destination.kind,
      state: status?.state ?? 'active',
      ...(status?.pausedBy === undefined
        ? {}
        : {
            paused_by: status.pausedBy,
            paused_since: new Date(status.pausedSince ?? now).toISOString(),
          }),
      waiting: Math.max(mine?.count ?? 0, status?.held ?? 0),
      ...(pending.complete ? {} : { waiting_at_least: true }),
      held: status?.held ?? 0,
      oldest_seconds: oldest === Infinity ? 0 : Math.max(0, Math.round((now - oldest) / 1000)),
      fails_in_a_row: status?.fails ?? 0,
    };
  });
  if (json) output.out(`${JSON.stringify(rows)}\n`);
  else {
    printRows(
      output,
      rows.map((row) => ({ ...row, waiting: `${row.waiting}${pending.complete ? '' : '+'}` })),
      ['name', 'kind', 'state', 'waiting', 'held', 'oldest_seconds', 'fails_in_a_row'],
      false,
    );
  }
  return 0;
}

/**
 * Per destination, the forward jobs still to send to it and the oldest one's time: read from
 * the queue, STATUS_SCAN jobs at the most (`complete` false when there were more).
 */
async function pendingByName(config: Config, redis: RedisConnection) {
  const queue = createForwardQueue(redis, config.queuePrefix);
  const byName = new Map<string, { count: number; oldest: number }>();
  let read = 0;
  let complete = true;
  try {
    for (const state of ['wait', 'prioritized', 'active', 'delayed'] as const) {
      for (let start = 0; ; start += PAGE) {
        if (read >= STATUS_SCAN) {
          complete = false;
          break;
        }
        const jobs: Job<ForwardJobData>[] = await queue.getJobs(
          [state],
          start,
          start + PAGE - 1,
          true,
        );
        read += jobs.length;
        for (const job of jobs) count(job, byName);
        if (jobs.length < PAGE) break;
      }
    }
  } finally {
    await queue.close();
  }
  return { byName, complete };
}

function count(job: Job<ForwardJobData>, byName: Map<string, { count: number; oldest: number }>) {
  const given = job.data.refused ?? {};
  for (const name of job.data.destinations) {
    if (Object.hasOwn(given, name)) continue;
    const known = byName.get(name) ?? { count: 0, oldest: Infinity };
    byName.set(name, { count: known.count + 1, oldest: Math.min(known.oldest, job.timestamp) });
  }
}
