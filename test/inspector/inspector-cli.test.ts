import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { eventually } from '../../src/util/eventually';
import { forgetTimeline } from '../helpers/inspector-bed';
import { startTestPipeline, type TestPipeline } from '../helpers/test-pipeline';

/** `audio-webhooks inspect <id> [--event E] [--json]`: the inspector's delivery on a terminal. */
let pipeline: TestPipeline;

beforeAll(async () => {
  pipeline = await startTestPipeline({});
});
afterAll(async () => {
  await pipeline.close();
});

interface Detail {
  event: string;
  id: string;
  state: string;
  duplicates: number;
  payload: unknown;
  timeline: { step: string; detail: string }[];
}

/** `inspect --json` once the delivery's `handled` step is recorded. */
async function inspectedWhenHandled(...args: string[]): Promise<Detail> {
  return await eventually(
    async () => {
      const { code, stdout } = await pipeline.cli('inspect', ...args, '--json');
      if (code !== 0) return undefined;
      const detail = JSON.parse(stdout) as Detail;
      return detail.timeline.some((s) => s.step === 'handled') ? detail : undefined;
    },
    { timeoutMs: 15_000 },
  ).catch((error: unknown) => {
    throw new Error(`inspect ${args.join(' ')}: no handled step within 15 s`, { cause: error });
  });
}

it('--json prints the API object: state, payload as received, the whole timeline', async () => {
  const id = `cli-inspect-${Date.now()}`;
  const delivery = sampleDelivery('key.revoked', { id });
  await pipeline.receiver.queue.pause();
  await pipeline.post(delivery).expect(202);
  await pipeline.post(delivery).expect(200);
  await pipeline.receiver.queue.resume();
  const detail = await inspectedWhenHandled(id);
  expect(detail).toMatchObject({ event: 'key.revoked', id, state: 'handled', duplicates: 1 });
  expect(detail.payload).toEqual(JSON.parse(JSON.stringify(delivery)));
  expect(detail.timeline.map((s) => s.step)).toEqual([
    'received',
    'duplicate',
    'attempt',
    'handled',
  ]);
  // The same with --event, which names where to look.
  expect((await inspectedWhenHandled(id, '--event', 'key.revoked')).id).toBe(id);
});

it('the table: state, timeline and forwards, in words', async () => {
  const id = `cli-table-${Date.now()}`;
  await pipeline.post(sampleDelivery('key.revoked', { id })).expect(202);
  await inspectedWhenHandled(id);
  const { code, stdout, stderr } = await pipeline.cli('inspect', id);
  expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  expect(stdout).toContain(`key.revoked ${id}: HANDLED`);
  expect(stdout).toMatch(/\breceived\s+signed with WEBHOOK_SECRETS index 0, \d+ bytes/);
  expect(stdout).toMatch(/\battempt\s+attempt 1 by worker /);
  expect(stdout).toContain('forwards\n(none)');
});

it('no timeline record, its job kept: found from the job, the same object as the API', async () => {
  const id = `cli-job-only-${Date.now()}`;
  const delivery = sampleDelivery('key.revoked', { id });
  await pipeline.post(delivery).expect(202);
  await inspectedWhenHandled(id);
  await forgetTimeline(pipeline, 'key.revoked', id);
  const { code, stdout, stderr } = await pipeline.cli('inspect', id, '--json');
  expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  const detail = JSON.parse(stdout) as Detail;
  expect(detail).toMatchObject({ event: 'key.revoked', id, state: 'handled', duplicates: 0 });
  expect(detail.payload).toEqual(JSON.parse(JSON.stringify(delivery)));
  expect(detail.timeline.map((s) => s.step)).toEqual(['received', 'handled']);
});

it('an id never received: exit 1 with one line; no id: exit 2', async () => {
  const unknown = await pipeline.cli('inspect', 'never-received');
  expect(unknown.code).toBe(1);
  expect(unknown.stdout).toBe('');
  expect(unknown.stderr).toBe('audio-webhooks: no delivery of id "never-received" is kept\n');
  const underEvent = await pipeline.cli('inspect', 'never-received', '--event', 'audio.ready');
  expect(underEvent.stderr).toContain('under audio.ready');
  expect((await pipeline.cli('inspect')).code).toBe(2);
  expect((await pipeline.cli('inspect', 'a', '--all')).code).toBe(2);
});
