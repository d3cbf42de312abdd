import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { serve } from '../../src/http/serve';
import { createTestReceiver, type TestReceiver } from '../helpers/test-receiver';

const run = promisify(execFile);
const root = join(__dirname, '..', '..');

/** The shell block that follows `<!-- marker… -->` in the README, exactly as a reader copies it. */
export function readmeBlock(marker: string): string {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const at = readme.indexOf(`<!-- ${marker}`);
  if (at < 0) throw new Error(`README has no <!-- ${marker} --> block`);
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(at));
  if (!block?.[1]) throw new Error(`no sh block after <!-- ${marker} -->`);
  return block[1];
}

let receiver: TestReceiver;
let server: Awaited<ReturnType<typeof serve>>;
beforeAll(async () => {
  receiver = await createTestReceiver({ WEBHOOK_SECRETS: 'whsec_from_the_readme' });
  server = await serve(receiver.app, 0, '127.0.0.1');
});
afterAll(async () => {
  await server.close();
  await receiver.close();
});

it("the README's openssl + curl signing example is accepted, then recognised as a duplicate", async () => {
  const script = readmeBlock('signing-example');
  const env = {
    PATH: process.env.PATH ?? '',
    SECRET: 'whsec_from_the_readme',
    URL: `http://127.0.0.1:${server.port}/webhooks`,
  };
  const first = await run('bash', ['-euo', 'pipefail', '-c', script], { env });
  expect(first.stdout).toBe('{"received":true,"duplicate":false}');
  const again = await run('bash', ['-euo', 'pipefail', '-c', script], { env });
  expect(again.stdout).toBe('{"received":true,"duplicate":true}');
  const [job] = await receiver.queue.getWaiting();
  expect(job?.data.event).toEqual({ event: 'key.revoked', data: { id: 'key_demo' } });
});

it('with a wrong secret the same example gets 401', async () => {
  const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', readmeBlock('signing-example')], {
    env: {
      PATH: process.env.PATH ?? '',
      SECRET: 'not-the-secret',
      URL: `http://127.0.0.1:${server.port}/webhooks`,
    },
  });
  expect(JSON.parse(stdout)).toEqual({ detail: 'no signature matched any configured secret' });
});
