import cluster, { type Worker } from 'node:cluster';
import {
  AggregatorRegistry,
  type MetricObjectWithValues,
  type MetricValue,
  type Registry,
} from 'prom-client';
import type { Logger } from 'pino';
import { withDeadline } from '../util/deadline.js';

const ASK = 'audio-webhooks:metrics-request';
const ANSWER = 'audio-webhooks:metrics-answer';
const COLLECT = 'audio-webhooks:metrics-collect';
const COLLECTED = 'audio-webhooks:metrics-collected';

/**
 * How long a receiver process waits for the primary's sum: below Prometheus's default 10 s
 * scrape timeout.
 */
export const CLUSTER_METRICS_DEADLINE_MS = 8_000;
/**
 * How long the primary waits for each process's own metrics. One that has not answered by then
 * (a process just re-forked and still starting, one stalled) is counted by its last answer:
 * prom-client's all-or-nothing sum made every scrape fail after 5 s while one process could not
 * answer.
 */
const PER_PROCESS_MS = 2_000;

type Snapshot = MetricObjectWithValues<MetricValue<string>>[];

interface Ask {
  readonly type: typeof ASK;
  readonly id: number;
}
interface Answer {
  readonly type: typeof ANSWER;
  readonly id: number;
  readonly text?: string;
  readonly error?: string;
}
interface Collect {
  readonly type: typeof COLLECT;
  readonly id: number;
}
interface Collected {
  readonly type: typeof COLLECTED;
  readonly id: number;
  readonly metrics: Snapshot;
}

const is =
  <T extends { type: string }>(type: T['type']) =>
  (message: unknown): message is T =>
    (message as Partial<T> | null)?.type === type;
const isAsk = is<Ask>(ASK);
const isAnswer = is<Answer>(ANSWER);
const isCollect = is<Collect>(COLLECT);
const isCollected = is<Collected>(COLLECTED);

/** Counters and histograms only: what a process that is gone counted still happened. */
const cumulative = (snapshot: Snapshot): Snapshot =>
  snapshot.filter((metric) => {
    // prom-client types `type` as a numeric enum; at run time it is the exposition's word.
    const type = metric.type as unknown as string;
    return type === 'counter' || type === 'histogram';
  });

/**
 * In the cluster's primary (WEB_CONCURRENCY > 1): answers a receiver process's request for the
 * whole receiver's metrics. It asks every process for its own and sums them with prom-client's
 * AggregatorRegistry.aggregate (counters and histograms add; each gauge says how it combines:
 * what is read from Redis, the queue's and the server's, is one number read by every process and
 * says `max`; `webhook_redis_up` says `min`, so one process cut off from Redis shows; see
 * telemetry/). A scrape lands on any one process; without this, it saw that process's counts
 * only, and Prometheus read every other scrape as a counter reset. The sum is of the processes
 * that answer within PER_PROCESS_MS, the last answer of those that do not, and the counters of
 * processes that exited (their last answer), so a total never goes backwards when a process is
 * replaced; what a process counted after its last scrape dies with it.
 */
export function answerMetricsRequests(logger: Logger): void {
  const latest = new Map<number, Snapshot>();
  /** The counters of exited processes: folded into one snapshot at the next scrape. */
  let departed: Snapshot[] = [];
  const waiting = new Map<number, (snapshot: Snapshot) => void>();
  let next = 0;

  cluster.on('exit', (worker) => {
    const last = latest.get(worker.id);
    latest.delete(worker.id);
    if (last !== undefined) departed.push(cumulative(last));
  });

  const collect = (worker: Worker) => {
    const id = next++;
    const answered = new Promise<Snapshot>((resolve) => {
      waiting.set(id, resolve);
      worker.send({ type: COLLECT, id } satisfies Collect, (error: Error | null) => {
        if (error !== null) waiting.delete(id);
      });
    });
    return withDeadline(answered, PER_PROCESS_MS, `receiver process ${worker.id}`)
      .then((snapshot) => void latest.set(worker.id, snapshot))
      .catch(() => undefined)
      .finally(() => waiting.delete(id));
  };

  async function gather(): Promise<string> {
    const workers = Object.values(cluster.workers ?? {}).filter(
      (worker): worker is Worker => worker?.isConnected() === true,
    );
    await Promise.all(workers.map(collect));
    if (departed.length > 1)
      departed = [await AggregatorRegistry.aggregate(departed).getMetricsAsJSON()];
    return AggregatorRegistry.aggregate([...latest.values(), ...departed]).metrics();
  }

  cluster.on('message', (worker, message: unknown) => {
    if (isCollected(message)) {
      waiting.get(message.id)?.(message.metrics);
      return;
    }
    if (!isAsk(message)) return;
    void gather()
      .then(
        (text) => ({ text }),
        (error: unknown) => {
          logger.warn({ err: error }, 'could not gather the receiver processes’ metrics');
          return { error: error instanceof Error ? error.message : String(error) };
        },
      )
      .then((answer) => {
        if (worker.isConnected()) worker.send({ type: ANSWER, id: message.id, ...answer });
      });
  });
}

/**
 * In a receiver process of a cluster: answers the primary's requests for this process's metrics,
 * and returns what /metrics serves: the sum over every process, asked of the primary.
 */
export function clusterMetricsText(registry: Registry): () => Promise<string> {
  const pending = new Map<number, { resolve(text: string): void; reject(error: Error): void }>();
  let next = 0;
  process.on('message', (message: unknown) => {
    if (isCollect(message)) {
      void registry.getMetricsAsJSON().then((metrics) => {
        process.send?.({ type: COLLECTED, id: message.id, metrics });
      });
      return;
    }
    if (!isAnswer(message)) return;
    const waiter = pending.get(message.id);
    if (waiter === undefined) return;
    if (message.text !== undefined) waiter.resolve(message.text);
    else waiter.reject(new Error(message.error ?? 'no metrics'));
  });
  return () => {
    const id = next++;
    const answered = new Promise<string>((resolve, reject) => {
      pending.set(id, { resolve, reject });
      process.send?.({ type: ASK, id } satisfies Ask);
    });
    return withDeadline(answered, CLUSTER_METRICS_DEADLINE_MS, 'the receiver processes').finally(
      () => pending.delete(id),
    );
  };
}
