import { runCli } from '../../src/cli/main';
import { customEvents } from '../../src/hooks/custom-events';
import { serve } from '../../src/http-server/serve';
import { events } from '../../src/examples/events';
import { createTestReceiver, TEST_SECRET, type TestReceiver } from '../helpers/test-receiver';

// `send` of an event of the fork's own (src/examples/events.ts's voice.converted, as a fork
// copies it): its sample is only {id}, so its fields come with --data.
let receiver: TestReceiver;
let server: Awaited<ReturnType<typeof serve>>;
let url: string;
beforeAll(async () => {
  receiver = await createTestReceiver({}, { customEvents: customEvents(events) });
  server = await serve(receiver.listener, 0, '127.0.0.1');
  url = `http://127.0.0.1:${server.port}/webhooks`;
});
afterAll(async () => {
  await server.close();
  await receiver.close();
});

async function cli(...args: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(
    args,
    { WEBHOOK_SECRETS: TEST_SECRET },
    { out: (text) => (stdout += text) },
    { out: (text) => (stderr += text) },
  );
  return { code, stdout, stderr };
}

it('--data is merged over {id}: the receiver accepts it and queues exactly that data', async () => {
  const data = { audio_url: 'https://cdn.example.com/vc-1.wav', voice: 'nova' };
  const sent = await cli(
    'send',
    'voice.converted',
    '--url',
    url,
    '--id',
    'vc-1',
    '--data',
    JSON.stringify(data),
  );
  expect(sent).toMatchObject({ code: 0, stderr: '' });
  expect(sent.stdout).toMatch(/\nHTTP 202\n/);
  const [job] = await receiver.queue.getWaiting();
  expect(JSON.parse(job?.data.body ?? '')).toEqual({
    event: 'voice.converted',
    data: { id: 'vc-1', ...data },
  });
});

it('without its fields the answer is 400, and a hint says how to give them', async () => {
  const sent = await cli('send', 'voice.converted', '--url', url, '--id', 'vc-2');
  expect(sent.code).toBe(1);
  expect(sent.stdout).toMatch(/\nHTTP 400\n/);
  expect(sent.stderr).toBe(
    `audio-webhooks: hint: voice.converted is not a built-in event, so the sample's data is only {"id"}; give its fields with --data '{...}' (merged over the sample, shallowly)\n`,
  );
  const partial = await cli('send', 'voice.converted', '--url', url, '--data', '{"voice":"nova"}');
  expect(partial.stdout).toMatch(/\nHTTP 400\n/);
  expect(partial.stderr).toMatch(
    /^audio-webhooks: hint: voice\.converted is not a built-in event: its data was \{"id"\} with --data merged over it, shallowly; .*\n$/,
  );
  // A built-in event's 400 is about what was sent, not a missing sample: no hint.
  const builtIn = await cli('send', 'audio.ready', '--url', url, '--data', '{"kind":1}');
  expect(builtIn.stdout).toMatch(/\nHTTP 400\n/);
  expect(builtIn.stderr).toBe('');
});

it('send --help says how --data combines with the sample', async () => {
  const { code, stdout } = await cli('send', '--help');
  expect(code).toBe(0);
  expect(stdout).toMatch(/only \{id\} for any other event/);
  expect(stdout).toMatch(/--data is merged over it, shallowly/);
});
