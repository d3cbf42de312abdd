import { parseSettings } from '../../src/config/config';
import { SANDBOX_SETTINGS, sandboxConfig } from '../../src/sandbox/sandbox-settings';

const service = {
  redisUrl: 'redis://127.0.0.1:6379',
  redisSentinels: [],
  redisSentinelName: 'mymaster',
  redisClusterNodes: [],
  webhookSecrets: ['whsec_a', 'whsec_b'],
};

describe('sandboxConfig', () => {
  it('signs with the first of WEBHOOK_SECRETS; the rotated_secret fault adds the next', () => {
    const config = sandboxConfig(parseSettings(SANDBOX_SETTINGS, {}), service);
    expect(config).toMatchObject({
      secret: 'whsec_a',
      rotatedSecret: 'whsec_b',
      host: '127.0.0.1',
      publicHost: '127.0.0.1',
    });
    const alone = sandboxConfig(parseSettings(SANDBOX_SETTINGS, { SANDBOX_SECRET: 'own' }), {
      ...service,
      webhookSecrets: [],
    });
    expect(alone).toMatchObject({ secret: 'own', rotatedSecret: 'own_rotated' });
  });

  it('hands out 127.0.0.1, not a wildcard, unless told its public name', () => {
    const wildcard = sandboxConfig(
      parseSettings(SANDBOX_SETTINGS, { SANDBOX_HOST: '0.0.0.0' }),
      service,
    );
    expect(wildcard).toMatchObject({ host: '0.0.0.0', publicHost: '127.0.0.1' });
    const named = sandboxConfig(
      parseSettings(SANDBOX_SETTINGS, { SANDBOX_HOST: '0.0.0.0', SANDBOX_PUBLIC_HOST: 'sandbox' }),
      service,
    );
    expect(named).toMatchObject({ publicHost: 'sandbox' });
  });

  it('with a Cluster, refuses a SANDBOX_PREFIX without a {hash tag}, naming it', () => {
    const cluster = { ...service, redisClusterNodes: [{ host: '127.0.0.1', port: 7000 }] };
    expect(sandboxConfig(parseSettings(SANDBOX_SETTINGS, {}), cluster)).toEqual({
      error: 'SANDBOX_PREFIX must hold a {hash tag} such as {sandbox} with REDIS_CLUSTER_NODES',
    });
    expect(
      sandboxConfig(parseSettings(SANDBOX_SETTINGS, { SANDBOX_PREFIX: '{sbx}' }), cluster),
    ).toMatchObject({ prefix: '{sbx}' });
  });

  it('needs a secret', () => {
    expect(
      sandboxConfig(parseSettings(SANDBOX_SETTINGS, {}), { ...service, webhookSecrets: [] }),
    ).toEqual({
      error: 'no signing secret: pass --secret or set WEBHOOK_SECRETS',
    });
  });
});
