import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/settings';
import { resolveDestinations } from '../../src/forwarding/settings/resolve-destinations';
import { serviceSettings } from '../helpers/service-settings';
import { spawnService, type ServiceProcess } from '../helpers/spawn-service';

const dir = mkdtempSync(join(tmpdir(), 'aw-forward-config-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const SECRET = 'whsec_dGVzdC1mb3J3YXJkLXNlY3JldC0zMi1ieXRlcyEhIQ==';
let files = 0;
/** A FORWARD_CONFIG file holding `content` (an object is written as JSON), and its path. */
function configFile(content: unknown): string {
  const path = join(dir, `forward-${++files}.json`);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}
const env = (settings: Record<string, string>) => ({
  WEBHOOK_SECRETS: 's1',
  FORWARD_SECRET: SECRET,
  ...settings,
});

/** What a start refused with `settings` says (ConfigError's message). */
function refusalOf(settings: Record<string, string>): string {
  try {
    loadConfig(env(settings));
  } catch (error: unknown) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error('the configuration was accepted');
}
const refusal = (content: unknown, settings: Record<string, string> = {}) =>
  refusalOf({ FORWARD_CONFIG: configFile(content), ...settings });

const INDEXER = {
  url: 'https://bot:pw@hooks.example.com/audio?token=s3cr3t',
  name: 'indexer',
  filter: { type: 'audio.ready', data: { voice: { $in: ['nova', 'alloy'] } } },
  attempts: 3,
  timeout_ms: 2_000,
  rate_per_second: 0.5,
};

describe('a FORWARD_CONFIG file', () => {
  it('becomes destinations, after FORWARD_URLS, with their own settings or the defaults', () => {
    const config = loadConfig(
      env({
        FORWARD_URLS: 'nats://127.0.0.1:4222/audio.stored',
        FORWARD_CONFIG: configFile({
          destinations: [INDEXER, { url: 'amqp://mq.internal/?exchange=audio' }],
        }),
        FORWARD_ATTEMPTS: '7',
        FORWARD_TIMEOUT_MS: '9000',
      }),
    );
    const [nats, indexer, amqp] = resolveDestinations(config);
    expect(nats).toMatchObject({ kind: 'nats', attempts: 7, timeoutMs: 9_000 });
    expect(indexer).toMatchObject({
      kind: 'http',
      name: 'indexer',
      attempts: 3,
      timeoutMs: 2_000,
      ratePerSecond: 0.5,
    });
    // The URL keeps its credentials for the client; the name shown is the one given.
    expect(indexer?.url.password).toBe('pw');
    expect(amqp).toMatchObject({ kind: 'amqp', exchange: 'audio', attempts: 7, timeoutMs: 9_000 });
    expect(amqp?.name).toMatch(/^amqp:\/\/mq\.internal:5672~[0-9a-f]{8}$/);
    expect(amqp).not.toHaveProperty('ratePerSecond');
    expect(amqp).not.toHaveProperty('filter');

    const filter = indexer?.filter;
    const message = { type: 'audio.ready', id: 'a', timestamp: '2026-11-24T00:00:00Z' };
    expect(filter?.matches({ ...message, data: { voice: 'nova' } })).toBe(true);
    expect(filter?.matches({ ...message, data: { voice: 'echo' } })).toBe(false);
    expect(filter?.source).toEqual(INDEXER.filter);
  });

  it('unset, or with no destinations, adds none', () => {
    expect(resolveDestinations(loadConfig(env({})))).toEqual([]);
    const empty = loadConfig(env({ FORWARD_CONFIG: configFile({ destinations: [] }) }));
    expect(resolveDestinations(empty)).toEqual([]);
  });
});

describe('a start refused with one line naming FORWARD_CONFIG, the destination and the problem', () => {
  const second = (fields: Record<string, unknown>) => ({
    destinations: [
      { url: 'https://a.example/x' },
      { url: 'https://hooks.example.com/T0/s3cr3t', ...fields },
    ],
  });
  it.each<[string, unknown, string]>([
    [
      'a rate of 0',
      second({ name: 'indexer', rate_per_second: 0 }),
      'FORWARD_CONFIG destination 2 (indexer): rate_per_second must be > 0',
    ],
    [
      'a negative rate',
      second({ rate_per_second: -1 }),
      'FORWARD_CONFIG destination 2: rate_per_second must be > 0',
    ],
    [
      'a rate that is text',
      second({ rate_per_second: '5' }),
      'FORWARD_CONFIG destination 2: rate_per_second must be a number',
    ],
    [
      'a bad filter',
      second({ name: 'indexer', filter: { data: { voice: { $regex: '^n' } } } }),
      'FORWARD_CONFIG destination 2 (indexer): filter at data.voice: unknown operator $regex',
    ],
    [
      'a filter with a prototype key',
      JSON.parse(
        '{"destinations": [{"url": "https://a.example/", "filter": {"__proto__": {"x": 1}}}]}',
      ),
      'FORWARD_CONFIG destination 1: filter: field name "__proto__" is not allowed',
    ],
    [
      'an unknown key in a destination',
      second({ name: 'indexer', retries: 3 }),
      'FORWARD_CONFIG destination 2 (indexer): unknown key retries (known: url, name, filter, attempts, timeout_ms, rate_per_second)',
    ],
    [
      'an unknown key in the file',
      { destinations: [], defaults: {} },
      'FORWARD_CONFIG unknown key defaults (known: destinations)',
    ],
    ['no destinations list', {}, 'FORWARD_CONFIG destinations must be a list of destinations'],
    [
      'a file that is not an object',
      [],
      'FORWARD_CONFIG must hold an object such as {"destinations": […]}',
    ],
    [
      'a destination without a url',
      second({ url: undefined }),
      'FORWARD_CONFIG destination 2: url is required',
    ],
    [
      'a destination that is not an object',
      { destinations: ['https://a.example/'] },
      'FORWARD_CONFIG destination 1: must be an object such as {"url": "https://…"}',
    ],
    [
      'attempts of 0',
      second({ attempts: 0 }),
      'FORWARD_CONFIG destination 2: attempts must be a whole number from 1 to 100',
    ],
    [
      'attempts of 101',
      second({ attempts: 101 }),
      'FORWARD_CONFIG destination 2: attempts must be a whole number from 1 to 100',
    ],
    [
      'attempts of 1.5',
      second({ attempts: 1.5 }),
      'FORWARD_CONFIG destination 2: attempts must be a whole number from 1 to 100',
    ],
    [
      'timeout_ms of 99',
      second({ timeout_ms: 99 }),
      'FORWARD_CONFIG destination 2: timeout_ms must be a whole number from 100 to 600000',
    ],
    [
      'a name with a space',
      second({ name: 'my indexer' }),
      'FORWARD_CONFIG destination 2: name must be 1 to 100 letters, digits, ".", "_" or "-"',
    ],
    [
      'a name of 101 characters',
      second({ name: 'x'.repeat(101) }),
      'FORWARD_CONFIG destination 2: name must be 1 to 100',
    ],
    [
      'an unknown scheme',
      second({ name: 'indexer', url: 'ftp://files.example/s3cr3t' }),
      'FORWARD_CONFIG destination 2 (indexer): unknown scheme ftp:',
    ],
    [
      'a url that does not parse',
      second({ url: 's3cr3t' }),
      'FORWARD_CONFIG destination 2 is not a URL',
    ],
    [
      'an AMQP url without exchange or routing key',
      second({ url: 'amqp://user:s3cr3t@mq/' }),
      'FORWARD_CONFIG destination 2 (amqp://mq:5672~',
    ],
  ])('%s', (_name, content, expected) => {
    const message = refusal(content);
    expect(message).toContain(`invalid configuration: ${expected}`);
    expect(message.split('\n')).toHaveLength(1);
    // Never the URL's text: Slack's and Teams' URLs hold their secret in the path.
    expect(message).not.toMatch(/s3cr3t|hooks\.example\.com|user:/);
  });

  it('a file that cannot be read, or is not JSON (whose text is not quoted: it may hold a secret)', () => {
    const missing = join(dir, 'missing.json');
    expect(refusalOf({ FORWARD_CONFIG: missing })).toBe(
      `invalid configuration: FORWARD_CONFIG cannot be read: ENOENT: no such file or directory, open '${missing}'`,
    );
    const broken = configFile('{"destinations": [{"url": "https://u:s3cr3t@h.example/"');
    expect(refusalOf({ FORWARD_CONFIG: broken })).toBe(
      `invalid configuration: FORWARD_CONFIG ${broken} is not valid JSON`,
    );
  });

  it('an HTTP destination without FORWARD_SECRET names the variable it came from', () => {
    expect(
      refusal(
        { destinations: [{ url: 'https://a.example/', name: 'indexer' }] },
        { FORWARD_SECRET: '' },
      ),
    ).toBe(
      'invalid configuration: FORWARD_CONFIG names an HTTP destination (indexer) but neither FORWARD_SECRET nor FORWARD_SIGNING_KEY is set: HTTP forwards are signed with one or both',
    );
  });

  it('two destinations with one name, across both lists or in the file: one line', () => {
    const url = 'https://hooks.example.com/T0/s3cr3t';
    const across = refusal({ destinations: [{ url }] }, { FORWARD_URLS: url });
    expect(across).toMatch(
      /^invalid configuration: FORWARD_URLS entry 1 and FORWARD_CONFIG destination 1 are both named https:\/\/hooks\.example\.com:443~[0-9a-f]{8}: give one another "name" in FORWARD_CONFIG$/,
    );
    expect(
      refusal({
        destinations: [
          { url: 'https://a.example/', name: 'x' },
          { url: 'nats://n/s', name: 'x' },
        ],
      }),
    ).toBe(
      'invalid configuration: FORWARD_CONFIG destination 1 and FORWARD_CONFIG destination 2 are both named x: give one another "name" in FORWARD_CONFIG',
    );
  });
});

describe('the real service process refuses to start, with one line', () => {
  const running: ServiceProcess[] = [];
  afterEach(() => {
    for (const service of running.splice(0)) service.child.kill('SIGKILL');
  });

  it.each<[string, unknown, string]>([
    [
      'a bad filter',
      {
        destinations: [
          { url: 'https://a.example/x' },
          {
            url: 'https://b.example/s3cr3t',
            name: 'indexer',
            filter: { type: { $where: 'true' } },
          },
        ],
      },
      'audio-webhooks: invalid configuration: FORWARD_CONFIG destination 2 (indexer): filter at type: unknown operator $where',
    ],
    [
      'a rate of 0',
      { destinations: [{ url: 'https://b.example/s3cr3t', name: 'indexer', rate_per_second: 0 }] },
      'audio-webhooks: invalid configuration: FORWARD_CONFIG destination 1 (indexer): rate_per_second must be > 0',
    ],
    [
      'an unknown key in the file',
      { destinations: [{ url: 'https://b.example/s3cr3t' }], retry: true },
      'audio-webhooks: invalid configuration: FORWARD_CONFIG unknown key retry (known: destinations)',
    ],
  ])('%s', async (_name, content, line) => {
    const service = spawnService(
      serviceSettings({ FORWARD_SECRET: SECRET, FORWARD_CONFIG: configFile(content) }),
    );
    running.push(service);
    expect(await service.exited).toBe(1);
    expect(service.stderr()).toBe(`${line}\n`);
    expect(service.logs).toEqual([]);
  });
});
