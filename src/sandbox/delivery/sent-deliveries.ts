import type { RedisConnection } from '../../redis/connections.js';
import type { Fault } from './faults.js';

export interface Attempt {
  /** Epoch ms the attempt was sent. */
  readonly at: number;
  readonly status?: number;
  readonly error?: string;
  readonly ms: number;
  /** The fault this attempt carried, if any. */
  readonly fault?: Fault;
}

export type DeliveryState = 'pending' | 'delivered' | 'exhausted';

export interface SentDelivery {
  readonly id: string;
  readonly event: string;
  readonly data_id: string;
  readonly state: DeliveryState;
  readonly attempts: readonly Attempt[];
  readonly faults: readonly Fault[];
  /** The body as first serialised; every attempt sends these bytes (re-signed). */
  readonly body: string;
  readonly created_at: number;
}

/** Deliveries and their attempt logs: `<prefix>:delivery-index` (by creation) and records. */
export function createSentDeliveries(redis: RedisConnection, prefix: string) {
  const index = `${prefix}:delivery-index`;
  const records = `${prefix}:delivery-records`;
  const parse = (raw: string | null) =>
    raw === null ? undefined : (JSON.parse(raw) as SentDelivery);
  return {
    async add(all: readonly SentDelivery[]): Promise<void> {
      const tx = redis.multi();
      for (const record of all) {
        tx.hset(records, record.id, JSON.stringify(record));
        tx.zadd(index, record.created_at, record.id);
      }
      await tx.exec();
    },
    async get(id: string): Promise<SentDelivery | undefined> {
      return parse(await redis.hget(records, id));
    },
    async put(record: SentDelivery): Promise<void> {
      await redis.hset(records, record.id, JSON.stringify(record));
    },
    /** Oldest first. */
    async list(): Promise<SentDelivery[]> {
      const ids = await redis.zrange(index, '0', '-1');
      const found: SentDelivery[] = [];
      for (let i = 0; i < ids.length; i += 1000) {
        const values = await redis.hmget(records, ...ids.slice(i, i + 1000));
        for (const value of values) {
          const record = parse(value);
          if (record) found.push(record);
        }
      }
      return found;
    },
  };
}

export type SentDeliveries = ReturnType<typeof createSentDeliveries>;
