import autocannon from 'autocannon';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { signedDelivery } from './lib.js';

export interface LoadResult {
  readonly requestsPerSecond: number;
  /** 2xx answers per second. */
  readonly acceptedPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly p999Ms: number;
  readonly non2xx: number;
  readonly errors: number;
  readonly timeouts: number;
  readonly total: number;
  /** data.id of every delivery answered 2xx. */
  readonly acceptedIds: string[];
}

export interface LoadOptions {
  readonly connections: number;
  readonly durationSeconds: number;
}

/**
 * Posts unique audio.ready deliveries, each signed afresh, over keep-alive connections. Every
 * request carries a new id, so every one is new work for the receiver.
 */
export async function runLoad(
  url: string,
  { connections, durationSeconds }: LoadOptions,
): Promise<LoadResult> {
  const acceptedIds: string[] = [];
  const run = autocannon({
    url,
    connections,
    duration: durationSeconds,
    timeout: 10,
    requests: [
      {
        method: 'POST',
        setupRequest(request, context: { id?: string }) {
          const id = randomUUID();
          context.id = id;
          return { ...request, ...signedDelivery(id) };
        },
        onResponse(status, _body, context: { id?: string }) {
          if (status >= 200 && status < 300 && context.id !== undefined)
            acceptedIds.push(context.id);
        },
      },
    ],
  });
  const result = await run;
  const seconds = result.duration || durationSeconds;
  return {
    requestsPerSecond: Math.round(result.requests.total / seconds),
    acceptedPerSecond: Math.round(result['2xx'] / seconds),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    p999Ms: (result.latency as unknown as Record<string, number>).p99_9 ?? NaN,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    total: result.requests.total,
    acceptedIds,
  };
}

/** The value below which `share` of the sorted `values` lie. */
function percentile(sorted: readonly number[], share: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * share))] ?? NaN;
}

/**
 * Open loop at a constant arrival rate: delivery i is due at start + i / rate, evenly spaced (a
 * provider's deliveries arrive on their own schedule, not when answers come back). Each is sent
 * when due, whatever is still unanswered, and its latency runs from then to its answer (waiting
 * for a free connection included). autocannon's overallRate is not this: it lets each connection
 * send its whole second's share at once, in a burst at the top of every second. Bodies are signed
 * before the clock starts, and the generator sleeps between sends, so it takes little CPU from
 * the receiver it measures.
 */
export async function runOpenLoop(
  url: string,
  { connections, durationSeconds, rate }: LoadOptions & { rate: number },
): Promise<LoadResult> {
  const target = new URL(url);
  const total = Math.round(rate * durationSeconds);
  const deliveries = Array.from({ length: total }, () => {
    const id = randomUUID();
    return { id, ...signedDelivery(id) };
  });
  const pool = new Pool(target.origin, {
    connections,
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
  const latencies: number[] = [];
  const acceptedIds: string[] = [];
  let non2xx = 0;
  let errors = 0;
  const inFlight: Promise<void>[] = [];
  const send = (i: number) => {
    const sent = performance.now();
    const delivery = deliveries[i];
    if (delivery === undefined) return;
    const { id, body, headers } = delivery;
    inFlight.push(
      pool.request({ method: 'POST', path: target.pathname, headers, body }).then(
        async (res) => {
          await res.body.dump();
          latencies.push(performance.now() - sent);
          if (res.statusCode >= 200 && res.statusCode < 300) acceptedIds.push(id);
          else non2xx++;
        },
        () => {
          errors++;
        },
      ),
    );
  };
  const started = performance.now();
  const interval = 1000 / rate;
  for (let next = 0; next < total;) {
    const now = performance.now();
    while (next < total && started + next * interval <= now) {
      send(next);
      next++;
    }
    // Waits for the next one's turn on a timer: a busy loop here would take a whole core from
    // the receiver and Redis, which share this machine with the generator.
    await sleep(Math.max(0, started + next * interval - performance.now()));
  }
  await Promise.all(inFlight);
  const seconds = (performance.now() - started) / 1000;
  await pool.close();
  latencies.sort((a, b) => a - b);
  const round = (ms: number) => Math.round(ms * 10) / 10;
  return {
    requestsPerSecond: Math.round(total / seconds),
    acceptedPerSecond: Math.round(acceptedIds.length / seconds),
    p50Ms: round(percentile(latencies, 0.5)),
    p99Ms: round(percentile(latencies, 0.99)),
    p999Ms: round(percentile(latencies, 0.999)),
    non2xx,
    errors,
    timeouts: 0,
    total,
    acceptedIds,
  };
}
