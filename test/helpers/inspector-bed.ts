import { serve, type RunningServer } from '../../src/http-server/serve';
import { deliveryKeys } from '../../src/queue/delivery-keys';
import { timelineKeys } from '../../src/history/delivery-timeline';
import {
  forwardSecret,
  startHttpEndpoint,
  type HttpEndpoint,
} from '../../harness/forward-destinations';
import { startLocalCdn, type LocalCdn } from '../../harness/local-cdn';
import { startTestPipeline, type TestPipeline } from './test-pipeline';

/** What the inspector's tests stand on: a pipeline that downloads, forwards and shows the page. */
export interface InspectorBed {
  readonly cdn: LocalCdn;
  readonly endpoint: HttpEndpoint;
  readonly pipeline: TestPipeline;
  /** The receiver on a real port, for a browser or supertest by URL. */
  readonly server: RunningServer;
  /** The one forward destination's name, as the workers announce it. */
  readonly destination: string;
  /** `forward status --json`'s state of that destination. */
  destinationState(): Promise<string | undefined>;
  close(): Promise<void>;
}

/**
 * Receiver and workers on the test Redis with a real HTTPS CDN and one HTTP forward destination;
 * the dashboard and inspector on, with actions (ADMIN_READ_ONLY=false); two download attempts.
 */
export async function startInspectorBed(password: string): Promise<InspectorBed> {
  const cdn = await startLocalCdn();
  const secret = forwardSecret();
  const endpoint = await startHttpEndpoint(secret);
  const pipeline = await startTestPipeline(
    {
      CDN_URL: cdn.origin,
      DOWNLOAD_ALLOW_PRIVATE_IPS: 'true',
      DOWNLOAD_ATTEMPTS: '2',
      ADMIN_PASSWORD: password,
      ADMIN_READ_ONLY: 'false',
      // The name inspector-page.test.ts's browser reaches the page by (any other gets 421).
      ADMIN_HOSTS: 'inspector.internal',
    },
    cdn.ca,
    { FORWARD_URLS: endpoint.url, FORWARD_SECRET: secret },
  );
  const server = await serve(pipeline.receiver.listener, 0, '127.0.0.1');
  const status = async () =>
    JSON.parse((await pipeline.cli('forward', 'status', '--json')).stdout) as {
      name: string;
      state: string;
    }[];
  const destination = (await status())[0]?.name ?? '';
  return {
    cdn,
    endpoint,
    pipeline,
    server,
    destination,
    destinationState: async () => (await status())[0]?.state,
    async close() {
      await server.close();
      await pipeline.close();
      await Promise.all([cdn.close(), endpoint.close()]);
    },
  };
}

/**
 * Deletes a delivery's timeline record and its index entries, as if it had been accepted before
 * timelines were kept, or its record had expired while its job or dedupe mark lasts.
 */
export async function forgetTimeline(
  pipeline: TestPipeline,
  event: string,
  id: string,
): Promise<void> {
  const { redis, config } = pipeline.receiver;
  const keys = timelineKeys(deliveryKeys(config.queuePrefix).placeOf(event, id));
  await redis.del(keys.timeline);
  await redis.zrem(keys.all, keys.member);
  await redis.zrem(keys.failed, keys.member);
}

/** Removes the job the pair's dedupe mark names (as the dashboard's "remove" does): the mark stays. */
export async function removeMarkedJob(
  pipeline: TestPipeline,
  event: string,
  id: string,
): Promise<void> {
  const { redis, config, queue } = pipeline.receiver;
  const jobId = await redis.get(deliveryKeys(config.queuePrefix).pairOf(event, id).mark);
  if (jobId === null) throw new Error(`no dedupe mark for ${event} ${id}`);
  await (await queue.getJob(jobId))?.remove();
}
