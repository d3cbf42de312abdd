import { randomUUID } from 'node:crypto';
import { mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { Browser, Page } from 'playwright-core';
import { Redis } from 'ioredis';
import request from 'supertest';
import { createForwardQueue, forwardJobId } from '../../src/forwarding/forward-queue';
import { ADMIN_PATH } from '../../src/receiver/admin-dashboard';
import { serve, type RunningServer } from '../../src/http-server/serve';
import { createLogger } from '../../src/telemetry/logger';
import { eventually } from '../../src/util/eventually';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { launchChromium, TEST_OUTPUT } from '../helpers/servers/browser';
import { audio, startLocalCdn, type LocalCdn } from '../../harness/local-cdn';
import { freePort } from '../../harness/private-redis';
import { serviceSettings, webOn } from '../helpers/service-settings';
import { spawnService } from '../helpers/spawn-service';
import { startTestPipeline, type TestPipeline } from '../helpers/test-pipeline';
import { createTestReceiver, deleteKeys } from '../helpers/test-receiver';

const PASSWORD = 'correct horse battery staple';
const NOT_FOUND = '/voices/missing.mp3';
/**
 * A name the browser resolves to 127.0.0.1. Unlike 127.0.0.1 itself, which browsers trust as
 * if it were https, an http:// origin on it is plain HTTP as an INTERNAL_PORT is.
 */
const INTERNAL_HOST = 'dashboard.internal';

let browser: Browser;
let cdn: LocalCdn;

beforeAll(async () => {
  [browser, cdn] = await Promise.all([
    launchChromium([`--host-resolver-rules=MAP ${INTERNAL_HOST} 127.0.0.1`]),
    startLocalCdn(),
  ]);
  mkdirSync(TEST_OUTPUT, { recursive: true });
});
afterAll(async () => {
  await Promise.all([browser.close(), cdn.close()]);
});

interface Dashboard {
  readonly pipeline: TestPipeline;
  readonly server: RunningServer;
  readonly base: string;
  readonly jobId: string;
  close(): Promise<void>;
}

/**
 * A pipeline whose one delivery failed for good (the CDN answered 404), with the receiver
 * listening on a real port for the browser.
 */
async function dashboardWithFailedJob(readOnly: boolean): Promise<Dashboard> {
  cdn.route(NOT_FOUND, (_req, res) => res.writeHead(404).end());
  const pipeline = await startTestPipeline(
    {
      CDN_URL: cdn.origin,
      DOWNLOAD_ALLOW_PRIVATE_IPS: 'true',
      DOWNLOAD_ATTEMPTS: '1',
      ADMIN_PASSWORD: PASSWORD,
      ADMIN_READ_ONLY: String(readOnly),
    },
    cdn.ca,
  );
  const delivery = sampleDelivery('audio.ready', {
    id: 'item-404',
    data: { audio_url: `${cdn.origin}${NOT_FOUND}` },
  });
  await pipeline.post(delivery).expect(202);
  expect(await pipeline.settled('item-404')).toMatchObject({ state: 'failed' });
  const [failed] = await pipeline.receiver.queue.getFailed();
  const server = await serve(pipeline.receiver.listener, 0, '127.0.0.1');
  return {
    pipeline,
    server,
    base: `http://127.0.0.1:${server.port}`,
    jobId: failed?.id ?? '',
    async close() {
      await server.close();
      await pipeline.close();
    },
  };
}

/** The id of the next job the worker completes. */
function nextCompleted(d: Dashboard): Promise<string | undefined> {
  return new Promise((resolve) => {
    d.pipeline.workers.worker.once('completed', (job) => {
      resolve(job.id);
    });
  });
}

async function openFailedJobs(base: string): Promise<Page> {
  const context = await browser.newContext({
    httpCredentials: { username: 'admin', password: PASSWORD },
    viewport: { width: 1280, height: 900 },
  });
  const page = await context.newPage();
  await page.goto(`${base}${ADMIN_PATH}/queue/deliveries?status=failed`);
  return page;
}

/** The reason the worker recorded, as the dashboard shows it on the failed job's card. */
const failureReason = (page: Page) =>
  page.getByText('404: the CDN refused the download').filter({ visible: true }).first();

/** "Retry all" and each job card's retry icon (labelled only by a hover tooltip). */
const retryButtons = (page: Page) =>
  page.locator('button', { has: page.locator('svg.lucide-refresh-cw') });

it('a browser logs in, sees why the delivery failed, retries it, and the job leaves the failed set', async () => {
  const d = await dashboardWithFailedJob(false);
  try {
    const page = await openFailedJobs(d.base);
    await failureReason(page).waitFor();
    await expect(page.getByText('deliveries').first().isVisible()).resolves.toBe(true);
    const screenshot = join(TEST_OUTPUT, 'admin-dashboard.png');
    await page.screenshot({ path: screenshot, fullPage: true });
    expect(statSync(screenshot).size).toBeGreaterThan(10_000);

    // The CDN has the file now; the operator retries from the page.
    cdn.route(NOT_FOUND, audio(Buffer.from('ID3 audio')));
    const completed = nextCompleted(d);
    // The job card's retry is an icon button (its label is a hover tooltip).
    await retryButtons(page).filter({ hasNotText: 'Retry all' }).click();
    await page.getByText('Are you sure that you want to retry this job?').waitFor();
    await page.getByRole('button', { name: 'Confirm' }).click();
    await expect(completed).resolves.toBe(d.jobId);
    expect(await d.pipeline.receiver.queue.getJobState(d.jobId)).toBe('completed');
    expect(await d.pipeline.receiver.queue.getFailedCount()).toBe(0);
    await page.context().close();
  } finally {
    await d.close();
  }
});

it('read-only (the default): the failed job shows, no retry button, and the API refuses a change', async () => {
  const d = await dashboardWithFailedJob(true);
  try {
    const page = await openFailedJobs(d.base);
    await failureReason(page).waitFor();
    await page.getByText('Data', { exact: true }).waitFor();
    // Neither the job's retry icon nor "Retry all" (both shown when writes are on).
    expect(await retryButtons(page).count()).toBe(0);
    // Even a request made from the dashboard's own page is refused.
    const status = await page.evaluate(async (url) => {
      const res = await fetch(url, { method: 'PUT' });
      return res.status;
    }, `${d.base}${ADMIN_PATH}/api/queues/deliveries/${d.jobId}/retry`);
    expect(status).toBe(403);
    expect(await d.pipeline.receiver.queue.getJobState(d.jobId)).toBe('failed');
    await page.context().close();
  } finally {
    await d.close();
  }
});

it('the page asks nothing of another origin, under a policy that forbids it, and lists both queues', async () => {
  // No FORWARD_URLS: the web process that serves the board does not forward, yet shows the queue.
  const receiver = await createTestReceiver({
    ADMIN_PASSWORD: PASSWORD,
    ADMIN_HOSTS: INTERNAL_HOST,
  });
  const server = await serve(receiver.listener, 0, '127.0.0.1');
  const base = `http://${INTERNAL_HOST}:${server.port}`;
  // A forward job under the receiver's QUEUE_PREFIX: the board must show that queue, not another.
  const forwards = createForwardQueue(receiver.redis, receiver.config.queuePrefix);
  const context = await browser.newContext({
    httpCredentials: { username: 'admin', password: PASSWORD },
  });
  try {
    const jobId = forwardJobId('41');
    await forwards.add(
      'audio.ready',
      { destinations: ['audit'], messageId: 'audio.ready:item-41', body: '{}' },
      { jobId },
    );
    // Well under the test's 30 s, so a missing element fails with its name rather than a timeout.
    context.setDefaultTimeout(10_000);
    const requested: string[] = [];
    const refused: string[] = [];
    context.on('request', (req) => requested.push(req.url()));
    // Egress closed, as where the service runs, and at once: a request that hung instead would
    // stall the page's render-blocking stylesheets and the test with them.
    await context.route(
      (url) => url.origin !== base,
      (route) => route.abort('internetdisconnected'),
    );
    const page = await context.newPage();
    page.on('console', (message) => {
      if (message.text().includes('Content Security Policy')) refused.push(message.text());
    });

    const answer = await page.goto(`${base}${ADMIN_PATH}`, { waitUntil: 'networkidle' });
    expect(requested.filter((url) => new URL(url).origin !== base)).toEqual([]);
    await page.getByText('deliveries', { exact: true }).first().waitFor();
    // The page, its stylesheet, scripts and API calls were seen: the check above was not empty.
    expect(requested.length).toBeGreaterThan(3);
    // Defence in depth: whatever a later bull-board adds to its page, the browser may fetch
    // nothing from elsewhere; and the policy refused nothing the page itself needs.
    const policy = answer?.headers()['content-security-policy'] ?? '';
    expect(policy).toContain("default-src 'self'");
    expect(policy).not.toMatch(/https?:|\*/);
    expect(refused).toEqual([]);

    await page.getByText('forwards', { exact: true }).first().waitFor();
    // The forwards queue's own page shows the job put there above.
    await page.goto(`${base}${ADMIN_PATH}/queue/forwards?status=waiting`, {
      waitUntil: 'networkidle',
    });
    await page.getByText(jobId).first().waitFor();
    expect(requested.filter((url) => new URL(url).origin !== base)).toEqual([]);
    expect(refused).toEqual([]);
  } finally {
    await context.close();
    await forwards.close();
    await server.close();
    await receiver.close();
  }
});

describe('without a browser', () => {
  const auth = `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}`;

  it('is not mounted when ADMIN_PASSWORD is unset', async () => {
    const receiver = await createTestReceiver();
    try {
      await request(receiver.listener).get(ADMIN_PATH).expect(404);
      await request(receiver.listener).get(ADMIN_PATH).set('Authorization', auth).expect(404);
    } finally {
      await receiver.close();
    }
  });

  it('asks for credentials, refuses wrong ones and logs the attempt without the password or the user name typed', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const receiver = await createTestReceiver(
      { ADMIN_PASSWORD: PASSWORD },
      { logger: createLogger('info', sink) },
    );
    try {
      const missing = await request(receiver.listener).get(ADMIN_PATH).expect(401);
      expect(missing.headers['www-authenticate']).toMatch(/^Basic realm=/);
      const wrongPassword = 'Tr0ub4dor&3-not-it';
      const wrong = await request(receiver.listener)
        .get(ADMIN_PATH)
        .auth('admin', wrongPassword)
        .expect(401);
      expect(wrong.headers['www-authenticate']).toMatch(/^Basic realm=/);
      await request(receiver.listener).get(ADMIN_PATH).auth('root', PASSWORD).expect(401);
      // A password typed into the user-name field: the log says only that it was not `admin`.
      const typedAsUser = 'Tr0ub4dor&3-typed-as-user';
      await request(receiver.listener).get(ADMIN_PATH).auth(typedAsUser, 'x').expect(401);
      await request(receiver.listener).get(ADMIN_PATH).set('Authorization', auth).expect(200);

      const failures = lines.filter((line) => line.includes('dashboard login failed'));
      // The bare request is the browser's usual first try (logged at debug only).
      expect(failures).toHaveLength(3);
      const logged = failures.map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(logged).toEqual([
        expect.objectContaining({ reason: 'wrong credentials', userIsAdmin: true }),
        expect.objectContaining({ reason: 'wrong credentials', userIsAdmin: false }),
        expect.objectContaining({ reason: 'wrong credentials', userIsAdmin: false }),
      ]);
      for (const line of logged) expect(line).not.toHaveProperty('user');
      const everything = lines.join('');
      expect(everything).not.toContain(typedAsUser);
      expect(everything).not.toContain('root');
      expect(everything).not.toContain(wrongPassword);
      expect(everything).not.toContain(PASSWORD);
    } finally {
      await receiver.close();
    }
  });

  it('refuses the 11th wrong password from one address with 429 and Retry-After; bare requests do not count', async () => {
    const receiver = await createTestReceiver({ ADMIN_PASSWORD: PASSWORD });
    try {
      // Requests without credentials (a browser's first try at each path) are never counted.
      for (let i = 0; i < 12; i++) await request(receiver.listener).get(ADMIN_PATH).expect(401);
      // The right password does not use up a guess.
      await request(receiver.listener).get(ADMIN_PATH).auth('admin', PASSWORD).expect(200);
      for (let i = 0; i < 10; i++)
        await request(receiver.listener).get(ADMIN_PATH).auth('admin', 'guess').expect(401);
      const refused = await request(receiver.listener)
        .get(ADMIN_PATH)
        .auth('admin', 'guess')
        .expect(429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      await request(receiver.listener).get(ADMIN_PATH).auth('admin', PASSWORD).expect(429);
    } finally {
      await receiver.close();
    }
  });

  it('on INTERNAL_PORT, guesses count per connecting address: a new X-Forwarded-For each time still gets 429 after the 10th', async () => {
    const [port, internalPort] = [await freePort(), await freePort()];
    const prefix = `test-${randomUUID()}`;
    // The service as an operator runs it, trusting a proxy on loopback (TRUST_PROXY's default):
    // the guesses below come from loopback, so PORT would believe their X-Forwarded-For.
    const service = spawnService(
      serviceSettings({
        QUEUE_PREFIX: prefix,
        ...webOn(port),
        INTERNAL_PORT: String(internalPort),
        TRUST_PROXY: 'loopback',
        ADMIN_PASSWORD: PASSWORD,
      }),
    );
    const board = `http://127.0.0.1:${internalPort}${ADMIN_PATH}`;
    const guess = async (i: number) => {
      const res = await fetch(board, {
        headers: {
          authorization: `Basic ${Buffer.from(`admin:guess-${String(i)}`).toString('base64')}`,
          'x-forwarded-for': `203.0.113.${String(i + 1)}`,
        },
        signal: AbortSignal.timeout(10_000),
      });
      return res.status;
    };
    try {
      await service.waitForLog('audio-webhooks started');
      await eventually(
        async () => {
          const ready = await fetch(`http://127.0.0.1:${internalPort}/readyz`, {
            signal: AbortSignal.timeout(2_000),
          }).catch(() => undefined);
          return ready?.ok === true ? true : undefined;
        },
        { timeoutMs: 20_000, everyMs: 100 },
      );
      const statuses: number[] = [];
      for (let i = 0; i < 12; i++) statuses.push(await guess(i));
      expect(statuses).toEqual([...Array<number>(10).fill(401), 429, 429]);
    } finally {
      service.child.kill('SIGTERM');
      await service.exited;
      const redis = new Redis(process.env.REDIS_URL ?? '');
      await deleteKeys(redis, `${prefix}:*`);
      redis.disconnect();
    }
  }, 60_000);

  it('with write actions on, accepts a change only from its own origin (CSRF)', async () => {
    const d = await dashboardWithFailedJob(false);
    try {
      const retry = `${ADMIN_PATH}/api/queues/deliveries/${d.jobId}/retry`;
      const host = `127.0.0.1:${d.server.port}`;
      const forged = await request(d.base)
        .put(retry)
        .set('Authorization', auth)
        .set('Origin', 'https://attacker.example')
        .expect(403);
      expect(forged.body).toEqual({ detail: expect.stringMatching(/\bOrigin header\b/) });
      await request(d.base).put(retry).set('Authorization', auth).expect(403); // no Origin at all
      await request(d.base)
        .put(retry)
        .set('Authorization', auth)
        .set('Origin', `http://${host}`)
        .set('Sec-Fetch-Site', 'cross-site')
        .expect(403);
      expect(await d.pipeline.receiver.queue.getJobState(d.jobId)).toBe('failed');

      cdn.route(NOT_FOUND, audio(Buffer.from('ID3 audio')));
      const completed = nextCompleted(d);
      await request(d.base)
        .put(retry)
        .set('Authorization', auth)
        .set('Origin', `http://${host}`)
        .expect(204);
      await expect(completed).resolves.toBe(d.jobId);
    } finally {
      await d.close();
    }
  });
});
