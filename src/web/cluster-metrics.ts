import cluster from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';
import type { Logger } from 'pino';
import { withDeadline } from '../redis/deadline.js';

const ASK = 'audio-webhooks:metrics-request';
const ANSWER = 'audio-webhooks:metrics-answer';

/**
 * How long a receiver process waits for the primary's sum: above prom-client's own 5 s limit on
 * the processes' answers, below Prometheus's default 10 s scrape timeout.
 */
export const CLUSTER_METRICS_DEADLINE_MS = 8_000;

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

const isAsk = (message: unknown): message is Ask => (message as Partial<Ask> | null)?.type === ASK;
const isAnswer = (message: unknown): message is Answer =>
  (message as Partial<Answer> | null)?.type === ANSWER;

/**
 * In the cluster's primary (WEB_CONCURRENCY > 1): answers a receiver process's request for the
 * whole receiver's metrics with prom-client's AggregatorRegistry, which asks every process for
 * its own and sums them (counters and histograms add; the queue gauges say `max`, see
 * metrics.ts). A scrape lands on any one process; without this, it saw that process's counts
 * only, and Prometheus read every other scrape as a counter reset.
 */
export function answerMetricsRequests(logger: Logger): void {
  const aggregator = new AggregatorRegistry();
  cluster.on('message', (worker, message: unknown) => {
    if (!isAsk(message)) return;
    void aggregator
      .clusterMetrics()
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
 * In a receiver process of a cluster: answers the primary's requests for this process's metrics
 * (prom-client's responder, installed by constructing an AggregatorRegistry), and returns what
 * /metrics serves: the sum over every process, asked of the primary. A process that cannot
 * answer makes the scrape fail (503) rather than come back short: a partial sum would go
 * backwards.
 */
export function clusterMetricsText(registry: Registry): () => Promise<string> {
  AggregatorRegistry.setRegistries([registry]);
  new AggregatorRegistry();
  const pending = new Map<number, { resolve(text: string): void; reject(error: Error): void }>();
  let next = 0;
  process.on('message', (message: unknown) => {
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
