import type { LocalCdn } from '../test/helpers/local-cdn.js';
import { startThreeDestinations } from '../test/helpers/forward-destinations.js';
import { perSecond, runEndToEnd, type EndToEndResult } from './end-to-end.js';
import { ratio } from './lib.js';

export interface ForwardingResult {
  readonly deliveries: number;
  readonly items: number;
  readonly none: { readonly itemsPerSecond: number; readonly workerCpuMsPerItem: number };
  readonly three: {
    readonly itemsPerSecond: number;
    readonly workerCpuMsPerItem: number;
    /** Distinct message ids each destination received (HTTP, JetStream, RabbitMQ). */
    readonly received: readonly [number, number, number];
  };
  readonly ratio: number;
}

/**
 * Forwarding's price: the same end to end run (4,000 deliveries, 64 KB files, local store) with
 * no destination, then with three — an HTTP endpoint (each message's signature verified), a
 * JetStream stream on this machine's NATS (127.0.0.1:4222) and a RabbitMQ queue (127.0.0.1:5672).
 * A run with them is timed until every item's message reached all three, not just until the
 * delivery jobs completed. The consumers run in the bench's own process, as the load generator
 * does. Each run has ids of its own, so the destinations' distinct ids count both runs' items.
 */
export async function runForwarding(
  redisUrl: string,
  cdn: LocalCdn,
  workerConcurrency: number,
  deliveries = 4000,
): Promise<ForwardingResult> {
  const targets = await startThreeDestinations();
  const destinations = [targets.endpoint, targets.stream, targets.rabbit];
  try {
    // Alternated, twice each, the better run of each kept: on two shared cores one run of the
    // same setting differs from the next by up to a third (the first on a cold machine most).
    const runs: { forwarding: boolean; run: EndToEndResult }[] = [];
    for (const forwarding of [false, true, false, true]) {
      process.stderr.write(`forwarding: ${forwarding ? 'three destinations' : 'none'}\n`);
      const before = destinations.map((d) => d.inbox.messages.length);
      const run = await runEndToEnd(redisUrl, cdn, {
        total: deliveries,
        workerConcurrency,
        ...(forwarding
          ? {
              env: targets.env,
              settledWhen: async (items: number) => {
                await Promise.all(
                  destinations.map((d, i) => d.inbox.atLeast((before[i] ?? 0) + items)),
                );
              },
            }
          : {}),
      });
      runs.push({ forwarding, run });
    }
    const best = (forwarding: boolean) =>
      runs
        .filter((r) => r.forwarding === forwarding)
        .map((r) => r.run)
        .sort((a, b) => perSecond(b) - perSecond(a))[0] as EndToEndResult;
    const none = best(false);
    const three = best(true);
    const cpuPerItem = (run: EndToEndResult) =>
      Math.round((run.workerCpuSeconds / run.audioFiles) * 1000 * 100) / 100;
    return {
      deliveries,
      items: three.audioFiles,
      none: { itemsPerSecond: perSecond(none), workerCpuMsPerItem: cpuPerItem(none) },
      three: {
        itemsPerSecond: perSecond(three),
        workerCpuMsPerItem: cpuPerItem(three),
        // Both runs' messages: every item of the two runs at each destination, once or more.
        received: destinations.map((d) => new Set(d.inbox.ids()).size / 2) as [
          number,
          number,
          number,
        ],
      },
      ratio: ratio(perSecond(three), perSecond(none)),
    };
  } finally {
    await targets.close();
  }
}

export function forwardingLine(f: ForwardingResult): string {
  return `${f.deliveries} deliveries (${f.items} items, 64 KB, local store) end to end, the better of two alternated runs each: ${f.none.itemsPerSecond} items/s with no destination, ${f.three.itemsPerSecond} items/s with three (HTTP, NATS JetStream, RabbitMQ; timed until every message reached all three: ${f.three.received.join(' / ')} distinct ids received): ratio ${f.ratio}; worker CPU per item ${f.none.workerCpuMsPerItem} ms → ${f.three.workerCpuMsPerItem} ms`;
}
