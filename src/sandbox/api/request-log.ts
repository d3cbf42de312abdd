import type { RedisConnection } from '../../redis/connections.js';

export interface LoggedRequest {
  readonly key_id: string | null;
  readonly endpoint: string;
  /** Epoch ms of arrival. */
  readonly at: number;
  /** Epoch ms the answer was sent: [at, done] is when the request was in flight. */
  readonly done: number;
  readonly status: number;
  /** The Retry-After (seconds) a 429 carried. */
  readonly retry_after?: number;
}

/** Every API request, in order of answer, for `GET /sandbox/requests` and the tests. */
export function createRequestLog(redis: RedisConnection, prefix: string) {
  const key = `${prefix}:requests`;
  return {
    async add(entry: LoggedRequest): Promise<void> {
      await redis.rpush(key, JSON.stringify(entry));
    },
    async list(): Promise<LoggedRequest[]> {
      return (await redis.lrange(key, 0, -1)).map((raw) => JSON.parse(raw) as LoggedRequest);
    },
  };
}
