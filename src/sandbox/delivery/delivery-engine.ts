import { randomBytes } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import type { RedisConnection } from '../../redis/connections.js';
import type { Logger } from 'pino';
import { request } from 'undici';
import { isConnectionError, type ConnectionLog } from '../../redis/watch-redis.js';
import { createSentDeliveries, type Attempt, type SentDelivery } from './sent-deliveries.js';
import { signAttempt, type Fault } from './faults.js';

/** Spec §6: the waits between attempts. Five retries: six attempts in all. */
export const RETRY_WAITS_MS = [30_000, 300_000, 1_800_000, 7_200_000, 21_600_000] as const;
export const MAX_ATTEMPTS = RETRY_WAITS_MS.length + 1;

export interface EngineOptions {
  readonly redis: RedisConnection;
  readonly prefix: string;
  readonly webhookUrl: string;
  readonly secrets: { readonly current: string; readonly rotated: string };
  readonly timeScale: number;
  readonly deliveryTimeoutMs: number;
  readonly logger: Logger;
  /** Where a Redis outage is logged, once per change of state. */
  readonly connection?: ConnectionLog;
  /** Attempts in flight at once (different deliveries). */
  readonly concurrency?: number;
}

export interface NewDelivery {
  readonly event: string;
  readonly data: Readonly<Record<string, unknown>> & { readonly id: string };
  readonly faults?: readonly Fault[];
}

const QUEUE = 'deliveries';

/**
 * The provider's delivery engine, durable in Redis: a delivery is a BullMQ job under the
 * sandbox's prefix with six attempts; the waits between them are the spec's, times --time-scale
 * (a delayed job survives a restart). A 2xx within the timeout delivers; anything else is
 * retried; after the sixth failure the delivery is exhausted. Every attempt is logged.
 */
export function createDeliveryEngine(options: EngineOptions) {
  const { redis, prefix, logger } = options;
  const records = createSentDeliveries(redis, prefix);
  const queue = new Queue(QUEUE, { connection: redis, prefix });

  async function post(body: string, signature: string, fault: Fault | undefined): Promise<Attempt> {
    const at = Date.now();
    const started = performance.now();
    const ms = () => Math.round(performance.now() - started);
    const tag = fault === undefined ? {} : { fault };
    try {
      const res = await request(options.webhookUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-service-signature': signature },
        body,
        signal: AbortSignal.timeout(options.deliveryTimeoutMs),
      });
      await res.body.dump({ limit: 64 * 1024 });
      return { at, status: res.statusCode, ms: ms(), ...tag };
    } catch (error: unknown) {
      const cause = (error as { cause?: unknown }).cause;
      const reason =
        cause instanceof Error
          ? cause.message
          : error instanceof Error
            ? error.message
            : String(error);
      return { at, error: reason, ms: ms(), ...tag };
    }
  }

  async function attempt(record: SentDelivery, number: number): Promise<Attempt[]> {
    const faults = number === 0 ? record.faults : [];
    const signed = signAttempt(record.body, options.secrets, faults);
    const fault = faults[0];
    return Promise.all(
      Array.from({ length: signed.copies }, () => post(signed.body, signed.signature, fault)),
    );
  }

  const worker = new Worker<{ id: string }>(
    QUEUE,
    async (job) => {
      const record = await records.get(job.data.id);
      if (record === undefined) return;
      const number = job.attemptsMade;
      const results = await attempt(record, number);
      const delivered = results.some(
        (r) => r.status !== undefined && r.status >= 200 && r.status < 300,
      );
      const state = delivered ? 'delivered' : number + 1 >= MAX_ATTEMPTS ? 'exhausted' : 'pending';
      await records.put({ ...record, state, attempts: [...record.attempts, ...results] });
      if (state === 'exhausted')
        logger.warn({ id: record.id, event: record.event }, 'delivery exhausted');
      if (!delivered) throw new Error(`attempt ${number + 1} not delivered`);
    },
    {
      connection: redis,
      prefix,
      concurrency: options.concurrency ?? 32,
      settings: {
        backoffStrategy: (attemptsMade: number) =>
          Math.round((RETRY_WAITS_MS[attemptsMade - 1] ?? 0) * options.timeScale),
      },
    },
  );
  // BullMQ repeats its connection's errors on both: an outage is the connection log's one line.
  const reportError = (error: unknown) => {
    if (isConnectionError(error)) options.connection?.down(error);
    else logger.warn({ err: error }, 'delivery engine error');
  };
  worker.on('error', reportError);
  queue.on('error', reportError);

  return {
    records,
    /** Queues deliveries; resolves with their ids once they are stored. */
    async send(deliveries: readonly NewDelivery[]): Promise<string[]> {
      const now = Date.now();
      const created: SentDelivery[] = deliveries.map((d) => ({
        id: `dlv_${randomBytes(10).toString('hex')}`,
        event: d.event,
        data_id: d.data.id,
        state: 'pending',
        attempts: [],
        faults: d.faults ?? [],
        body: JSON.stringify({ event: d.event, data: d.data }),
        created_at: now,
      }));
      await records.add(created);
      for (let i = 0; i < created.length; i += 1000) {
        await queue.addBulk(
          created.slice(i, i + 1000).map((record) => ({
            name: record.event,
            data: { id: record.id },
            opts: {
              jobId: record.id,
              attempts: MAX_ATTEMPTS,
              backoff: { type: 'schedule' },
              removeOnComplete: true,
              removeOnFail: true,
            },
          })),
        );
      }
      return created.map((record) => record.id);
    },
    async close(): Promise<void> {
      await worker.close();
      await queue.close();
    },
  };
}

export type DeliveryEngine = ReturnType<typeof createDeliveryEngine>;
