import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Job } from 'bullmq';
import type { Logger } from 'pino';
import request from 'supertest';
import { runCli } from '../../src/cli/main';
import { createLogger } from '../../src/telemetry/logger';
import { jobItemId, type DeliveryJobData } from '../../src/queue/delivery-job-data';
import type { CustomEvents } from '../../src/hooks/custom-events';
import type { Hooks } from '../../src/hooks/hooks';
import { startWorkers, type RunningWorkers } from '../../src/worker/start-workers';
import {
  createTestReceiver,
  signed,
  TEST_SECRET,
  testConfig,
  type TestReceiver,
} from './test-receiver';
import { audioDirEntries } from './audio-dir';

export type Settled = { state: 'completed'; result: unknown } | { state: 'failed'; reason: string };

export interface TestPipeline {
  readonly receiver: TestReceiver;
  readonly workers: RunningWorkers;
  readonly audioDir: string;
  /** POSTs a signed delivery over HTTP, as the provider would. */
  post(body: unknown): request.Test;
  /**
   * Resolves when the job for this data.id completes or fails for good; fails after `timeoutMs`
   * (25 s: below Jest's 30 s) naming the id and what has settled so far.
   */
  settled(dataId: string, timeoutMs?: number): Promise<Settled>;
  /** Runs the operator CLI in-process with this pipeline's environment. */
  cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
  files(): string[];
  close(): Promise<void>;
}

/**
 * Receiver and workers as ROLE=all runs them, on the test Redis, with their own AUDIO_DIR.
 * `workerEnv` is set on the workers only (as on a separate ROLE=worker process).
 */
export async function startTestPipeline(
  env: Record<string, string>,
  ca?: string,
  workerEnv: Record<string, string> = {},
  custom: { customEvents?: CustomEvents; hooks?: Partial<Hooks>; workerLogger?: Logger } = {},
): Promise<TestPipeline> {
  const audioDir = mkdtempSync(join(tmpdir(), 'aw-audio-'));
  const fullEnv = { AUDIO_DIR: audioDir, DOWNLOAD_BACKOFF_MS: '20', ...env };
  const receiver = await createTestReceiver(fullEnv, {
    ...(custom.customEvents === undefined ? {} : { customEvents: custom.customEvents }),
  });
  const workerConfig = testConfig({
    ...fullEnv,
    QUEUE_PREFIX: receiver.config.queuePrefix,
    ...workerEnv,
  });
  const { workerLogger = createLogger('silent'), ...options } = custom;
  const workers = await startWorkers(workerConfig, workerLogger, {
    ...options,
    ...(ca === undefined ? {} : { ca }),
  });
  const outcomes = new Map<string, Settled>();
  // A list per id: two waits on one id (a test and its helper) both resolve.
  const waiters = new Map<string, ((s: Settled) => void)[]>();
  const settle = (job: Job<DeliveryJobData> | undefined, outcome: Settled) => {
    const id = job === undefined ? undefined : jobItemId(job.data);
    if (id === undefined) return;
    outcomes.set(id, outcome);
    for (const resolve of waiters.get(id) ?? []) resolve(outcome);
    waiters.delete(id);
  };
  workers.worker.on('completed', (job, result) => {
    settle(job, { state: 'completed', result });
  });
  workers.worker.on('failed', (job, error) => {
    if (job?.finishedOn) settle(job, { state: 'failed', reason: error.message });
  });

  return {
    receiver,
    workers,
    audioDir,
    post(body) {
      const { raw, headers } = signed(body);
      return request(receiver.listener).post('/webhooks').set(headers).send(raw);
    },
    settled(dataId, timeoutMs = 25_000) {
      const known = outcomes.get(dataId);
      if (known) return Promise.resolve(known);
      return new Promise((resolve, reject) => {
        const waiter = (outcome: Settled) => {
          clearTimeout(timer);
          resolve(outcome);
        };
        const timer = setTimeout(() => {
          const list = waiters.get(dataId) ?? [];
          list.splice(list.indexOf(waiter), 1);
          const seen = [...outcomes.keys()].slice(-5);
          reject(
            new Error(
              `the job of ${JSON.stringify(dataId)} did not settle within ${timeoutMs} ms; ` +
                `${outcomes.size} settled${seen.length > 0 ? `, the last: ${seen.join(', ')}` : ''}`,
            ),
          );
        }, timeoutMs);
        // A deadline keeps nothing alive: a waiter that lost a race would otherwise hold the
        // Jest worker open until it fires.
        timer.unref();
        waiters.set(dataId, [...(waiters.get(dataId) ?? []), waiter]);
      });
    },
    async cli(...args) {
      let stdout = '';
      let stderr = '';
      // The workers' settings too: `forward` commands name their destinations.
      const cliEnv = {
        ...workerEnv,
        WEBHOOK_SECRETS: TEST_SECRET,
        REDIS_URL: receiver.config.redisUrl,
        QUEUE_PREFIX: receiver.config.queuePrefix,
        AUDIO_DIR: audioDir,
      };
      const code = await runCli(
        args,
        cliEnv,
        { out: (t) => (stdout += t) },
        { out: (t) => (stderr += t) },
      );
      return { code, stdout, stderr };
    },
    files: () => audioDirEntries(audioDir),
    async close() {
      await workers.close();
      await receiver.close();
    },
  };
}
