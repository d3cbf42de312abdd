import { copyFileSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { serve } from '../../src/http-server/serve';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { synthesizeWav } from '../../src/sandbox/audio/synthesize-wav';
import { eventually } from '../../src/util/eventually';
import { audio, type LocalCdn } from '../../harness/local-cdn';
import { launchChromium, TEST_OUTPUT } from '../helpers/servers/browser';
import type { TestPipeline } from '../helpers/test-pipeline';
import { startInspectorBed, type InspectorBed } from '../helpers/inspector-bed';
import { createTestReceiver } from '../helpers/test-receiver';

/**
 * The inspector's page at /admin/deliveries in a real Chromium: search, a delivery's page, the
 * actions through their confirmations, the refusals, the keyboard, 1280 px, and nothing from
 * another origin. UPDATE_DOCS_SCREENSHOT=1 also writes the screenshot docs/operations.md shows.
 */
const PASSWORD = 'inspector page password';
/** Names the browser resolves to 127.0.0.1: plain-HTTP origins, as an INTERNAL_PORT is. */
const HOST = 'inspector.internal';
const EVIL = 'elsewhere.internal';

let browser: Browser;
let bed: InspectorBed;
let cdn: LocalCdn;
let pipeline: TestPipeline;
let base: string;
let destination: string;
const handledId = `page-handled-${Date.now()}`;
const failedId = `page-failed-${Date.now()}`;

beforeAll(async () => {
  [browser, bed] = await Promise.all([
    launchChromium([`--host-resolver-rules=MAP ${HOST} 127.0.0.1, MAP ${EVIL} 127.0.0.1`]),
    startInspectorBed(PASSWORD),
  ]);
  ({ cdn, pipeline, destination } = bed);
  base = `http://${HOST}:${bed.server.port}`;
  cdn.route('/page/ok.mp3', audio(Buffer.from('ID3 page audio')));
  cdn.route('/page/down.mp3', (_req, res) => res.writeHead(503).end());
  const ok = { audio_url: `${cdn.origin}/page/ok.mp3`, voice: 'nova' };
  // Paused for every worker: the re-send is in before the first attempt.
  await pipeline.receiver.queue.pause();
  await pipeline.post(sampleDelivery('audio.ready', { id: handledId, data: ok })).expect(202);
  await pipeline.post(sampleDelivery('audio.ready', { id: handledId, data: ok })).expect(200);
  await pipeline.receiver.queue.resume();
  const down = { audio_url: `${cdn.origin}/page/down.mp3` };
  await pipeline.post(sampleDelivery('audio.ready', { id: failedId, data: down })).expect(202);
  expect(await pipeline.settled(handledId)).toMatchObject({ state: 'completed' });
  expect(await pipeline.settled(failedId)).toMatchObject({ state: 'failed' });
  mkdirSync(TEST_OUTPUT, { recursive: true });
});

afterAll(async () => {
  await browser.close();
  await bed.close();
});

/** A logged-in browser at 1280 px whose requests to any other origin fail at once. */
async function operator(): Promise<{
  context: BrowserContext;
  page: Page;
  refused: string[];
  elsewhere: string[];
}> {
  const context = await browser.newContext({
    httpCredentials: { username: 'admin', password: PASSWORD },
    viewport: { width: 1280, height: 900 },
  });
  context.setDefaultTimeout(10_000);
  const elsewhere: string[] = [];
  context.on('request', (req) => {
    if (new URL(req.url()).host !== `${HOST}:${bed.server.port}`) elsewhere.push(req.url());
  });
  const page = await context.newPage();
  const refused: string[] = [];
  page.on('console', (message) => {
    if (message.text().includes('Content Security Policy')) refused.push(message.text());
  });
  return { context, page, refused, elsewhere };
}

/** The delivery's page shows this text (reloaded until it does: another process writes it). */
async function shows(page: Page, text: string | RegExp): Promise<void> {
  await eventually(
    async () => {
      await page.reload();
      return (await page.getByText(text).count()) > 0 ? true : undefined;
    },
    { timeoutMs: 15_000, everyMs: 250 },
  ).catch((error: unknown) => {
    throw new Error(`the page never showed ${String(text)}`, { cause: error });
  });
}

it('finds a delivery by id from the keyboard, shows its whole path, and fits 1280 px', async () => {
  const { context, page, refused, elsewhere } = await operator();
  try {
    const answer = await page.goto(`${base}/admin/deliveries`);
    expect(answer?.status()).toBe(200);
    expect(answer?.headers()['content-security-policy']).toContain("default-src 'self'");
    // Both deliveries, each state as a word, newest first.
    await page.getByRole('cell', { name: failedId }).waitFor();
    await expect(page.locator('.state.failed').first().textContent()).resolves.toBe('failed');
    await expect(page.locator('.state.handled').first().textContent()).resolves.toBe('handled');

    // The search box has the focus: type the id, Enter, Tab to the result, Enter.
    await page.keyboard.type(handledId);
    await page.keyboard.press('Enter');
    await page.waitForURL(/\?id=/);
    await expect(page.locator('table').first().locator('tbody tr').count()).resolves.toBe(1);
    const focused = () =>
      page.evaluate<string | null>('document.activeElement?.textContent ?? null');
    for (let i = 0; i < 40 && (await focused()) !== handledId; i++)
      await page.keyboard.press('Tab');
    expect(await focused()).toBe(handledId);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: /audio\.ready/ }).waitFor();
    expect(page.url()).toContain(`/admin/deliveries/audio.ready/${handledId}`);

    await shows(page, `sent to ${destination}`);
    const timeline = await page.locator('ol.timeline li .step').allTextContents();
    expect(timeline.filter((step) => step !== 'forwarded')).toEqual([
      'received',
      'duplicate',
      'attempt',
      'stored',
      'handled',
    ]);
    await expect(page.locator('pre').last().textContent()).resolves.toContain('"voice": "nova"');
    await expect(page.locator('pre').first().textContent()).resolves.toContain('"sha256"');
    // The trace its forwards carry, as the API's detail gives it.
    const detail = await page.evaluate<{ trace_id: string | null }>(
      `fetch('/admin/api/deliveries/audio.ready/${handledId}').then((answer) => answer.json())`,
    );
    expect(detail.trace_id).toMatch(/^[0-9a-f]{32}$/);
    await expect(page.locator('dt:text-is("Trace") + dd').textContent()).resolves.toBe(
      detail.trace_id,
    );
    await page
      .getByRole('link', { name: /in the queue dashboard|[0-9a-f-]{36}/ })
      .first()
      .waitFor();
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(
      1280,
    );

    const screenshot = join(TEST_OUTPUT, 'inspector.png');
    await page.screenshot({ path: screenshot, fullPage: true });
    expect(statSync(screenshot).size).toBeGreaterThan(20_000);
    if (process.env.UPDATE_DOCS_SCREENSHOT === '1') {
      copyFileSync(screenshot, join(__dirname, '..', '..', 'docs', 'images', 'inspector.png'));
    }
    expect(refused).toEqual([]);
    expect(elsewhere).toEqual([]);
  } finally {
    await context.close();
  }
});

it('retries a failed delivery and replays a handled one, each after a confirmation', async () => {
  const { context, page } = await operator();
  try {
    await page.goto(`${base}/admin/deliveries/audio.ready/${failedId}`);
    await page.getByText('Failed because').waitFor();
    cdn.route('/page/down.mp3', audio(Buffer.from('ID3 back up')));
    await page.getByRole('link', { name: 'Retry this delivery…' }).click();
    await page.getByText(/goes back on the queue with fresh attempts/).waitFor();
    await page.getByRole('button', { name: /^Retry audio\.ready/ }).click();
    await page
      .getByRole('status')
      .getByText(/put back on the queue/)
      .waitFor();
    await shows(page, 'retried');
    await shows(page, /^handled$/);

    await page.goto(`${base}/admin/deliveries/audio.ready/${handledId}`);
    await page.getByRole('link', { name: 'Replay this delivery…' }).click();
    await page.getByText(/queued again from the archive as a new job/i).waitFor();
    await page.getByRole('button', { name: /^Replay audio\.ready/ }).click();
    await page
      .getByRole('status')
      .getByText(/queued again/i)
      .waitFor();
    await shows(page, 'replayed');
  } finally {
    await context.close();
  }
});

it("plays the stored audio and downloads it, from the inspector's API", async () => {
  const id = `page-audio-${Date.now()}`;
  const wav = synthesizeWav('the inspector plays this', 'nova');
  cdn.route('/page/spoken.wav', audio(wav, 'audio/wav'));
  const data = { audio_url: `${cdn.origin}/page/spoken.wav` };
  await pipeline.post(sampleDelivery('audio.ready', { id, data })).expect(202);
  expect(await pipeline.settled(id)).toMatchObject({ state: 'completed' });
  const { context, page } = await operator();
  try {
    await page.goto(`${base}/admin/deliveries/audio.ready/${id}`);
    await shows(page, /^Download /);
    // The player reads the audio's header from the API: a duration means it can play it.
    const loaded = await page.evaluate<{
      duration?: number;
      error?: string;
    }>(`new Promise((resolve) => {
      const player = document.querySelector('audio');
      const done = () => resolve({ duration: player.duration });
      player.addEventListener('loadedmetadata', done);
      player.addEventListener('error', () => resolve({ error: String(player.error && player.error.code) }));
      if (player.readyState >= 1) done();
    })`);
    expect(loaded.duration).toBeGreaterThan(0);
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: /^Download / }).click(),
    ]);
    expect(readFileSync(await download.path())).toEqual(wav);
  } finally {
    await context.close();
  }
});

it('pauses and resumes a destination for every worker', async () => {
  const { context, page } = await operator();
  try {
    await page.goto(`${base}/admin/deliveries`);
    await page.getByRole('link', { name: `Pause ${destination}…` }).click();
    await page.getByText(/holds the messages for/).waitFor();
    await page.getByRole('button', { name: `Pause destination ${destination}` }).click();
    await page.getByRole('status').getByText('The destination is now paused').waitFor();
    expect(await bed.destinationState()).toBe('paused');
    await page.getByRole('link', { name: `Resume ${destination}…` }).click();
    await page.getByRole('button', { name: `Resume destination ${destination}` }).click();
    await page.getByRole('status').getByText('The destination is now active').waitFor();
  } finally {
    await context.close();
  }
});

it("a form posted from another origin's page is refused, and nothing changes", async () => {
  const action = `${base}/admin/deliveries/destinations/${encodeURIComponent(destination)}/pause`;
  const evil: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(`<form method="post" action="${action}"><button>win a prize</button></form>`);
  });
  evil.listen(0, '127.0.0.1');
  await new Promise((resolve) => evil.once('listening', resolve));
  const { context, page } = await operator();
  try {
    await page.goto(`http://${EVIL}:${(evil.address() as AddressInfo).port}/`);
    const answer = page.waitForResponse((res) => res.url() === action);
    await page.getByRole('button', { name: 'win a prize' }).click();
    expect((await answer).status()).toBe(403);
    expect(await bed.destinationState()).toBe('active');
  } finally {
    await context.close();
    evil.close();
  }
});

it('read-only (the default): no action offered, and a change asked for anyway is 403', async () => {
  const receiver = await createTestReceiver({
    ADMIN_PASSWORD: PASSWORD,
    ADMIN_HOSTS: HOST,
    QUEUE_PREFIX: pipeline.receiver.config.queuePrefix,
  });
  const own = await serve(receiver.listener, 0, '127.0.0.1');
  const origin = `http://${HOST}:${own.port}`;
  const context = await browser.newContext({
    httpCredentials: { username: 'admin', password: PASSWORD },
  });
  try {
    const page = await context.newPage();
    await page.goto(`${origin}/admin/deliveries/audio.ready/${handledId}`);
    await page.getByText('Actions are off').waitFor();
    await expect(page.getByRole('link', { name: /Replay|Retry|Pause/ }).count()).resolves.toBe(0);
    const confirm = await page.goto(`${origin}/admin/deliveries/audio.ready/${handledId}/replay`);
    expect(confirm?.status()).toBe(403);
    const status = await page.evaluate(async (url) => {
      const res = await fetch(url, { method: 'POST' });
      return res.status;
    }, `${origin}/admin/api/deliveries/audio.ready/${handledId}/replay`);
    expect(status).toBe(403);
  } finally {
    await context.close();
    await own.close();
    // The pipeline's keys are the pipeline's to delete: only the connections close here.
    await receiver.queue.close();
    receiver.redis.disconnect();
  }
});
