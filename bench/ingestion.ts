import autocannon from 'autocannon';
import { randomUUID } from 'node:crypto';
import { sampleDelivery } from '../src/webhooks/sample-delivery.js';
import { signPayload } from '../src/webhooks/sign-payload.js';
import { BENCH_SECRET } from './lib.js';

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
  /**
   * Requests per second across all connections (autocannon's overallRate): a fixed arrival rate,
   * as a provider sends, instead of "as fast as answers come back". Each connection still waits
   * for its answer, so a stall longer than connections/rate delays later requests too (some
   * coordinated omission remains); 200 connections at 1,000/s leave 200 ms of slack.
   */
  readonly overallRate?: number;
}

/**
 * Posts unique audio.ready deliveries, each signed afresh, over keep-alive connections. Every
 * request carries a new id, so every one is new work for the receiver.
 */
export async function runLoad(
  url: string,
  { connections, durationSeconds, overallRate }: LoadOptions,
): Promise<LoadResult> {
  const acceptedIds: string[] = [];
  const run = autocannon({
    url,
    connections,
    duration: durationSeconds,
    timeout: 10,
    ...(overallRate === undefined ? {} : { overallRate }),
    requests: [
      {
        method: 'POST',
        setupRequest(request, context: { id?: string }) {
          const id = randomUUID();
          context.id = id;
          const body = JSON.stringify(sampleDelivery('audio.ready', { id }));
          return {
            ...request,
            body,
            headers: {
              'content-type': 'application/json',
              'x-service-signature': signPayload(body, BENCH_SECRET),
            },
          };
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
