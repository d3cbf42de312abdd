import { withDeadline } from '../../src/util/deadline';
import { freePort } from '../../harness/private-redis';
import { serviceSettings } from '../helpers/service-settings';
import { spawnService, type ServiceProcess } from '../helpers/spawn-service';

// The real `node dist/main.js` refuses a setting an operator must fix before it can be safe: exit
// 1, one line on standard error naming the variables, nothing on standard output, no stack trace,
// and never the secret or the password it was given.

const PASSWORD = 'hunter2-do-not-print';
/** Long enough for any HOST: a refusal below is for the setting it names, never the secret. */
const LONG_SECRET = 'whsec_' + 'k'.repeat(32);
/** Under the 16 characters a dashboard off loopback needs. */
const SHORT_PASSWORD = 'hunter2-short';
const running: ServiceProcess[] = [];
afterEach(() => {
  for (const service of running.splice(0))
    if (service.child.exitCode === null && service.child.signalCode === null)
      service.child.kill('SIGKILL');
});

async function refusal(
  env: Record<string, string>,
): Promise<{ code: number | null; line: string }> {
  const service = spawnService(
    serviceSettings({ WEBHOOK_SECRETS: LONG_SECRET, PORT: String(await freePort()), ...env }),
  );
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

describe('the dashboard where others can reach it', () => {
  it('ADMIN_PASSWORD under 16 characters on HOST=0.0.0.0: one line naming ADMIN_PASSWORD, not the password', async () => {
    const { code, line } = await refusal({ HOST: '0.0.0.0', ADMIN_PASSWORD: SHORT_PASSWORD });
    expect(code).toBe(1);
    expect(line).toMatch(
      /^audio-webhooks: invalid configuration: ADMIN_PASSWORD is shorter than 16/,
    );
    expect(line).not.toContain(SHORT_PASSWORD);
  });

  it('ADMIN_PASSWORD with TRUST_PROXY=true and no INTERNAL_PORT: one line naming INTERNAL_PORT', async () => {
    const { code, line } = await refusal({ TRUST_PROXY: 'true', ADMIN_PASSWORD: PASSWORD });
    expect(code).toBe(1);
    expect(line).toMatch(/^audio-webhooks: invalid configuration: INTERNAL_PORT is required/);
    expect(line).not.toContain(PASSWORD);
  });
});

describe('misspelt variables', () => {
  it('WEBHOOK_SECRET for WEBHOOK_SECRETS: the refusal names both', async () => {
    const { code, line } = await refusal({ WEBHOOK_SECRETS: '', WEBHOOK_SECRET: 'whsec_x' });
    expect(code).toBe(1);
    expect(line).toBe(
      'audio-webhooks: invalid configuration: WEBHOOK_SECRETS is required (WEBHOOK_SECRET is set: did you mean WEBHOOK_SECRETS?)',
    );
  });

  it('a variable that starts like a setting but is none: one warning line at start naming it', async () => {
    const service = spawnService(
      serviceSettings({
        WEBHOOK_SECRETS: LONG_SECRET,
        PORT: String(await freePort()),
        ROLE: 'web',
        WEB_CONCURRENCY: '2',
        REDIS_URLS: 'redis://elsewhere:6379',
      }),
    );
    running.push(service);
    await service.receiving(2);
    const warned = service.logs.filter((line) => line.variable !== undefined);
    expect(warned).toEqual([
      expect.objectContaining({
        level: 40,
        variable: 'REDIS_URLS',
        msg: 'REDIS_URLS is not a setting of this service and is ignored: did you mean REDIS_URL?',
      }),
    ]);
  });
});
