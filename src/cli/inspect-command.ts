import type { Config } from '../settings.js';
import { createArchive } from '../archive/archive.js';
import { createInspector, type DetailView } from '../inspector/inspector.js';
import { age } from '../inspector/page-frame.js';
import { loadCustom } from '../load-custom.js';
import { EVENT_NAMES } from '../provider-spec/events.js';
import { createDeliveryQueues } from '../queue/delivery-queue.js';
import { deliveryTimeline, timelineTtlMs } from '../history/delivery-timeline.js';
import type { RedisConnection } from '../redis/connections.js';
import { OperationalError } from './cli-errors.js';
import { printRows, type Output } from './print.js';
import { printable } from '../util/printable.js';
import { openFileArea } from './replay-command.js';

/**
 * `inspect <id> [--event E] [--json]`: what happened to one delivery, from the same model the
 * inspector's page and API read (inspector/inspector.ts): its state, timeline and forwards.
 * Without --event, the id is looked for under every event this service knows; the newest
 * delivery of it is shown, and the others named.
 */
export async function runInspect(
  id: string,
  flags: { readonly event: string | undefined; readonly json: boolean },
  config: Config,
  redis: RedisConnection,
  output: Output,
  errors: Output,
): Promise<number> {
  const queues = createDeliveryQueues({
    connection: redis,
    prefix: config.queuePrefix,
    shards: config.queueShards,
  });
  let archive: Promise<ReturnType<typeof createArchive> | undefined> | undefined;
  const inspector = createInspector({
    redis,
    prefix: config.queuePrefix,
    queues,
    timeline: deliveryTimeline(redis, queues[0].layout.placeOf, timelineTtlMs(config)),
    dedupeTtlSeconds: config.dedupeTtlSeconds,
    events: [...EVENT_NAMES, ...loadCustom().events.keys()],
    // Opened only when a payload is looked for; a store that cannot be read leaves it out.
    archive: () =>
      (archive ??=
        config.archiveRetentionHours === 0
          ? Promise.resolve(undefined)
          : openFileArea(config).then(createArchive, () => undefined)),
    forwarding: config,
  });
  try {
    const { timelines } = await inspector.search({ id, event: flags.event, limit: 10 });
    const [newest, ...others] = timelines;
    if (newest === undefined) {
      const under = flags.event === undefined ? '' : ` under ${flags.event}`;
      throw new OperationalError(`no delivery of id ${JSON.stringify(id)}${under} is kept`);
    }
    const found = await inspector.detail(newest.summary.event, id);
    if (found === undefined) throw new OperationalError(`the delivery of ${id} just expired`);
    if (flags.json) output.out(`${JSON.stringify(found.api)}\n`);
    else printDetail(found, output);
    for (const other of others) {
      const [shown, event] = [printable(id), printable(other.summary.event)];
      errors.out(
        `audio-webhooks: ${shown} was also received as ${event} (inspect ${shown} --event ${event})\n`,
      );
    }
    return 0;
  } finally {
    await Promise.all(queues.map((queue) => queue.close()));
  }
}

function printDetail({ api, jobId, failedReason, destinations }: DetailView, output: Output) {
  const paused = new Set(destinations.filter((d) => d.state === 'paused').map((d) => d.name));
  // Line breaks in the sender's text are escaped here; the rest at the edge (print.ts).
  const lines = [
    `${printable(api.event)} ${printable(api.id)}: ${api.state.toUpperCase()}`,
    `received   ${api.received_at} (${age(api.received_at)})`,
    `attempts   ${api.attempts}; sent again by the provider ${api.duplicates} time(s), answered duplicate`,
    `job        ${jobId ?? '(gone)'}${failedReason === undefined ? '' : `; failed because: ${printable(failedReason)}`}`,
    `trace      ${api.trace_id ?? '(not kept)'}`,
    `stored     ${api.stored === null ? '(nothing)' : JSON.stringify(api.stored)}`,
    `payload    ${api.payload === null ? '(no longer kept)' : JSON.stringify(api.payload)}`,
    '',
    'timeline',
  ];
  output.out(`${lines.join('\n')}\n`);
  printRows(
    output,
    api.timeline.map((step) => ({ ...step, at: step.at.replace('T', ' ').replace('Z', '') })),
    ['at', 'step', 'detail'],
    false,
  );
  output.out('\nforwards\n');
  printRows(
    output,
    api.forwards.map((f) => ({
      ...f,
      destination: paused.has(f.destination) ? `${f.destination} (paused)` : f.destination,
      last_error: f.last_error ?? '',
    })),
    ['destination', 'state', 'attempts', 'last_error'],
    false,
  );
}
