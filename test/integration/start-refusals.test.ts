import { randomUUID } from 'node:crypto';
import { withDeadline } from '../../src/util/deadline';
import { freePort } from '../../harness/private-redis';
import { spawnService, type ServiceProcess } from '../helpers/spawn-service';

// The real `node dist/main.js` refuses a setting an operator must fix before it can be safe: exit
// 1, one line on standard error naming the variables, nothing on standard output, no stack trace,
// and never the secret or the password it was given.

const PASSWORD = 'hunter2-do-not-print';
const running: ServiceProcess[] = [];
afterEach(() => {
  for (const service of running.splice(0))
    if (service.child.exitCode === null && service.child.signalCode === null)
      service.child.kill('SIGKILL');
});

async function refusal(
  env: Record<string, string>,
): Promise<{ code: number | null; line: string }> {
  const service = spawnService({
    WEBHOOK_SECRETS: 'whsec_' + 'k'.repeat(32),
    REDIS_URL: process.env.REDIS_URL ?? '',
    QUEUE_PREFIX: `test-${randomUUID()}`,
    PORT: String(await freePort()),
    ...env,
  });
  running.push(service);
  // A service that is not refused keeps running: the deadline turns that into a failure.
  const code = await withDeadline(service.exited, 10_000, 'the refusal');
  expect(service.logs).toEqual([]);
  const lines = service.stderr().split('\n');
  expect(lines).toHaveLength(2);
  expect(lines[1]).toBe('');
  return { code, line: lines[0] ?? '' };
}

describe('a malformed REDIS_URL: one line naming REDIS_URL, never the password', () => {
  it.each([
    `redis://:${PASSWORD}@localhost:99999`,
    `redis://:pa%zz${PASSWORD}@localhost:6379`,
    `http://:${PASSWORD}@x`,
    `redis://:${PASSWORD}/x@localhost:6379`,
  ])('%s', async (url) => {
    const { code, line } = await refusal({ REDIS_URL: url });
    expect(code).toBe(1);
    expect(line).toMatch(/^audio-webhooks: invalid configuration: REDIS_URL /);
    expect(line).not.toContain('hunter2');
    expect(line).not.toContain('pa%zz');
  });
});

describe('HOST other than loopback', () => {
  it.each([
    ['0.0.0.0', 'whsec_replace_me'],
    ['0.0.0.0', 'whsec_short-Kq7'],
    ['::', `whsec_${'k'.repeat(30)},dev-only-secret-change-me`],
  ])(
    'HOST=%s with WEBHOOK_SECRETS=%s: one line naming WEBHOOK_SECRETS, not the secret',
    async (host, secrets) => {
      const { code, line } = await refusal({ HOST: host, WEBHOOK_SECRETS: secrets });
      expect(code).toBe(1);
      expect(line).toMatch(/^audio-webhooks: invalid configuration: WEBHOOK_SECRETS .*HOST/);
      for (const secret of secrets.split(',')) expect(line).not.toContain(secret);
    },
  );
});

it('a dedupe window shorter than the retry window plus the signature tolerance: one line naming both', async () => {
  const { code, line } = await refusal({
    SIGNATURE_TOLERANCE_SECONDS: '86400',
    DEDUPE_TTL_SECONDS: '30931',
  });
  expect(code).toBe(1);
  expect(line).toMatch(
    /^audio-webhooks: invalid configuration: DEDUPE_TTL_SECONDS .*SIGNATURE_TOLERANCE_SECONDS/,
  );
});
