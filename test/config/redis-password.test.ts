import { loadConfig } from '../../src/settings';
import { problems as configProblems } from '../helpers/config-problems';

// REDIS_PASSWORD keeps Redis's password out of REDIS_URL, so that the URL can sit in a ConfigMap
// and the password in a Secret (deploy/kubernetes).
const PASSWORD = 'hunter2/s3cret@with:%41 and more';

const problems = (env: Record<string, string>) => configProblems({ WEBHOOK_SECRETS: 's', ...env });

it('is taken as written, with no %-escapes to get right, beside a URL that names the server only', () => {
  const config = loadConfig({
    WEBHOOK_SECRETS: 's',
    REDIS_URL: 'rediss://redis.internal.example:6379/2',
    REDIS_PASSWORD: PASSWORD,
  });
  expect(config.redisPassword).toBe(PASSWORD);
  expect(config.redisUrl).toBe('rediss://redis.internal.example:6379/2');
});

it('unset or empty: none, and the URL alone says how to connect', () => {
  expect(loadConfig({ WEBHOOK_SECRETS: 's' }).redisPassword).toBeUndefined();
  expect(loadConfig({ WEBHOOK_SECRETS: 's', REDIS_PASSWORD: '' }).redisPassword).toBeUndefined();
});

it('goes with a user in the URL (Redis ACLs), with Sentinels and with a Cluster', () => {
  for (const env of [
    { REDIS_URL: 'redis://app@redis:6379' },
    { REDIS_SENTINELS: 's1:26379,s2:26379' },
    { REDIS_CLUSTER_NODES: 'n1:6379', QUEUE_PREFIX: '{aw}' },
  ]) {
    expect(
      loadConfig({ WEBHOOK_SECRETS: 's', REDIS_PASSWORD: PASSWORD, ...env }).redisPassword,
    ).toBe(PASSWORD);
  }
});

it('refused beside a REDIS_URL that holds a password: one line naming both variables, neither password', () => {
  const found = problems({
    REDIS_URL: 'rediss://:url-pass-0123@redis:6379',
    REDIS_PASSWORD: PASSWORD,
  });
  expect(found).toEqual([
    expect.stringMatching(/^REDIS_PASSWORD is set and REDIS_URL holds a password too/),
  ]);
  expect(found[0]).not.toContain('url-pass');
  expect(found[0]).not.toContain('hunter2');
  // The start-up refusal is that one line.
  expect(() =>
    loadConfig({
      WEBHOOK_SECRETS: 's',
      REDIS_URL: 'redis://user:url-pass-0123@redis:6379',
      REDIS_PASSWORD: PASSWORD,
    }),
  ).toThrow(/^invalid configuration: REDIS_PASSWORD is set and REDIS_URL holds a password too/);
});
