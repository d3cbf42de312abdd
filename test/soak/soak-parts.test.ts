import { createHash } from 'node:crypto';
import { Agent, request } from 'undici';
import { Webhook } from 'standardwebhooks';
import { cdnContent } from '../../soak/cdn-content';
import { startFaultCdn, type FaultCdn } from '../../soak/fault-cdn';
import { startHttpDestination, type HttpDestination } from '../../soak/http-destination';

// The soak's own parts, over real sockets: its HTTP destination verifies Standard Webhooks
// signatures as the reference library makes them (and refuses others); its CDN serves the
// seed's bytes, and fails, slows and truncates on demand.

let cdn: FaultCdn;
let destination: HttpDestination;
let agent: Agent;

beforeAll(async () => {
  [cdn, destination] = await Promise.all([startFaultCdn(39), startHttpDestination()]);
  agent = new Agent({ connect: { ca: cdn.ca } });
});
afterAll(async () => {
  await Promise.all([cdn.close(), destination.close(), agent.close()]);
});

async function forward(secret: string, id: string, body: string): Promise<number> {
  const now = new Date();
  const answer = await request(destination.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': new Webhook(secret).sign(id, now, body),
    },
    body,
  });
  await answer.body.dump();
  return answer.statusCode;
}

it('the HTTP destination keeps a forward signed with FORWARD_SECRET, refuses another, and answers its faults', async () => {
  const body = JSON.stringify({ type: 'audio.ready', id: 'ü 1', stored: { sha256: 'ab' } });
  expect(await forward(destination.secret, 'audio.ready:sha256:x', body)).toBe(204);
  expect(destination.received).toEqual([
    { messageId: 'audio.ready:sha256:x', type: 'audio.ready', id: 'ü 1', storedSha256: 'ab' },
  ]);
  const other = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
  expect(await forward(other, 'audio.ready:x', body)).toBe(400);
  expect(destination.badSignatures).toEqual(['no v1 signature matches']);
  destination.mode = '429';
  destination.retryAfterS = 3;
  const limited = await request(destination.url, { method: 'POST', body: '{}' });
  expect([limited.statusCode, limited.headers['retry-after']]).toEqual([429, '3']);
  await limited.body.dump();
  destination.mode = 'normal';
  expect(destination.received).toHaveLength(1);
});

it('the CDN serves the seed’s bytes, and fails, truncates and slows down on demand', async () => {
  cdn.add({ n: 1, ext: '.mp3', size: 200_000 });
  const get = () => request(`${cdn.origin}/a/1.mp3`, { dispatcher: agent });
  const whole = await get();
  const bytes = Buffer.from(await whole.body.arrayBuffer());
  expect(whole.headers['content-type']).toBe('audio/mpeg');
  expect(createHash('sha256').update(bytes).digest('hex')).toBe(
    createHash('sha256')
      .update(cdnContent(39, 1, 200_000))
      .digest('hex'),
  );
  cdn.mode = 'truncating';
  await expect(get().then((answer) => answer.body.arrayBuffer())).rejects.toThrow();
  cdn.mode = 'failing';
  const failed = await get().then(
    async (answer) => {
      await answer.body.dump();
      return answer.statusCode;
    },
    () => 'reset',
  );
  expect([500, 502, 503, 'reset']).toContain(failed);
  cdn.mode = 'slow';
  const started = Date.now();
  const slow = get().then((answer) => answer.body.arrayBuffer());
  setTimeout(() => (cdn.mode = 'normal'), 400);
  expect((await slow).byteLength).toBe(200_000);
  expect(Date.now() - started).toBeGreaterThanOrEqual(350);
  expect(cdn.served).toMatchObject({ normal: 1, truncating: 1, failing: 1, slow: 1 });
});
