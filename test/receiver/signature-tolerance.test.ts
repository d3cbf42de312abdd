import request from 'supertest';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { createTestReceiver, signed, type TestReceiver } from '../helpers/test-receiver';

/**
 * SIGNATURE_TOLERANCE_SECONDS through the route, at its edges: |now − t| equal to the tolerance
 * is accepted, one second more is not, in both directions, for the default and another value.
 * The route reads the clock once per request; the test pins it there, so a second ticking
 * between signing and verifying cannot move the edge.
 */
describe.each([
  ['the default', {}, 300],
  ['SIGNATURE_TOLERANCE_SECONDS=60', { SIGNATURE_TOLERANCE_SECONDS: '60' }, 60],
])('%s', (_name, env: Record<string, string>, tolerance) => {
  let receiver: TestReceiver;
  const now = 1_800_000_000;
  beforeEach(async () => {
    receiver = await createTestReceiver(env);
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    await receiver.close();
  });

  async function statusAt(offset: number): Promise<number> {
    const { raw, headers } = signed(sampleDelivery('audio.failed'), { timestamp: now + offset });
    const clock = jest.spyOn(Date, 'now').mockReturnValue(now * 1000 + 400);
    try {
      return (await request(receiver.listener).post('/webhooks').set(headers).send(raw)).status;
    } finally {
      clock.mockRestore();
    }
  }

  it.each([
    ['exactly the tolerance old', -1, 0, 202],
    ['a second older', -1, 1, 401],
    ['exactly the tolerance ahead', 1, 0, 202],
    ['a second further ahead', 1, 1, 401],
  ])('%s', async (_case, sign, extra, expected) => {
    expect(await statusAt(sign * (tolerance + extra))).toBe(expected);
  });
});
