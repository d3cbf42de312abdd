import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import { Writable } from 'node:stream';
import { runCli } from '../../src/cli/main';
import { createLogger } from '../../src/telemetry/logger';
import { createRevocationRegistry } from '../../src/history/revocation-registry';
import { createFailureLog } from '../../src/history/failure-log';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { eventually } from '../../src/util/eventually';
import { startTestPipeline, type TestPipeline } from '../helpers/test-pipeline';

let p: TestPipeline;
beforeEach(async () => {
  p = await startTestPipeline({});
});
afterEach(() => p.close());

it('key.revoked lands in the revocation registry, read by isKeyRevoked and the CLI', async () => {
  await p
    .post(sampleDelivery('key.revoked', { id: 'key_123', data: { reason: 'leaked' } }))
    .expect(202);
  expect(await p.settled('key_123')).toEqual({ state: 'completed', result: { recorded: true } });

  const registry = createRevocationRegistry(p.receiver.redis, p.receiver.config.queuePrefix);
  expect(await registry.isKeyRevoked('key_123')).toBe(true);
  expect(await registry.isKeyRevoked('key_456')).toBe(false);

  const { code, stdout } = await p.cli('revoked-keys', '--json');
  expect(code).toBe(0);
  expect(JSON.parse(stdout)).toEqual([
    {
      id: 'key_123',
      revoked_at: expect.any(String),
      payload: { id: 'key_123', reason: 'leaked' },
    },
  ]);
  const table = await p.cli('revoked-keys');
  expect(table.stdout).toMatch(/^id\s+revoked_at\s+payload\nkey_123 /);
});

it('audio.failed is recorded once, newest first, and listed by the CLI', async () => {
  await p
    .post(sampleDelivery('audio.failed', { id: 'job-1', data: { error: 'voice unavailable' } }))
    .expect(202);
  await p.settled('job-1');
  await p.post(sampleDelivery('audio.failed', { id: 'job-2' })).expect(202);
  await p.settled('job-2');
  const { stdout } = await p.cli('failures', '--json');
  const rows = JSON.parse(stdout) as Record<string, unknown>[];
  expect(rows.map((f) => f.id)).toEqual(['job-2', 'job-1']);
  // One shape with forwards' rows: kind, id, event, data_id and at in every row.
  expect(rows[1]).toEqual({
    kind: 'audio.failed',
    id: 'job-1',
    event: 'audio.failed',
    data_id: 'job-1',
    at: expect.any(String),
    received_at: expect.any(String),
    payload: expect.objectContaining({ id: 'job-1', error: 'voice unavailable' }),
  });
  const table = await p.cli('failures');
  expect(table.stdout).toMatch(
    /^audio\.failed deliveries recorded .*:\nid\s+received_at\s+payload\njob-2 /,
  );
});

it('a "job failed" line names the item, not only the job', async () => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  const q = await startTestPipeline(
    {},
    undefined,
    {},
    { workerLogger: createLogger('info', sink) },
  );
  try {
    await q.post(sampleDelivery('audio.ready', { id: 'logged-id' })).expect(202);
    await q.settled('logged-id');
    const failed = lines
      .map((line) => JSON.parse(line) as { msg: string })
      .find((line) => line.msg.startsWith('job failed'));
    expect(failed).toMatchObject({ event: 'audio.ready', id: 'logged-id' });
  } finally {
    await q.close();
  }
});

it('a replayed item that fails again is listed once, and `retry --all` runs it once', async () => {
  // No CDN_URL: every download is refused at once, so each run fails for good.
  await p.post(sampleDelivery('audio.ready', { id: 'twice' })).expect(202);
  await p.settled('twice');
  expect((await p.cli('replay', '--id', 'twice')).code).toBe(0);
  await eventually(async () =>
    (await p.receiver.queue.getFailedCount()) === 2 ? true : undefined,
  );
  const listed = JSON.parse((await p.cli('failed', '--json')).stdout) as { data_id: string }[];
  expect(listed.map((row) => row.data_id)).toEqual(['twice']);
  await p.workers.worker.close();
  expect(await p.cli('retry', '--all')).toMatchObject({
    code: 0,
    stdout: '1 failed job put back on the queue\n',
  });
  // The replay's job is the latest: back on the queue at a replay's priority.
  expect(await p.receiver.queue.getJobCounts('waiting', 'prioritized', 'failed')).toEqual({
    waiting: 0,
    prioritized: 1,
    failed: 0,
  });
});

it('recording is idempotent and bounded', async () => {
  const log = createFailureLog(p.receiver.redis, p.receiver.config.queuePrefix, 3);
  const event = (id: string) => ({ event: 'audio.failed' as const, data: { id } });
  expect(await log.record(event('a'), '2026-01-01T00:00:00Z')).toBe(true);
  expect(await log.record(event('a'), '2026-01-01T00:00:09Z')).toBe(false);
  for (const [i, id] of ['b', 'c', 'd'].entries())
    await log.record(event(id), `2026-01-01T00:00:0${i + 1}Z`);
  expect((await log.list()).map((f) => f.id)).toEqual(['d', 'c', 'b']);
  expect(
    await p.receiver.redis.hlen(`${p.receiver.config.queuePrefix}:audio-failures:records`),
  ).toBe(3);
});

it('records of an earlier version (the whole id, the data re-serialised) are still read', async () => {
  const prefix = p.receiver.config.queuePrefix;
  const redis = p.receiver.redis;
  const longId = `key_${'l'.repeat(300)}`;
  const at = '2026-01-01T00:00:00.000Z';
  for (const id of ['key_old', longId]) {
    await redis.hset(
      `${prefix}:revoked-keys`,
      id,
      JSON.stringify({ id, revoked_at: at, payload: { id, reason: 'leaked' } }),
    );
  }
  await redis.zadd(`${prefix}:audio-failures`, Date.parse(at), 'job-old');
  await redis.hset(
    `${prefix}:audio-failures:records`,
    'job-old',
    JSON.stringify({ id: 'job-old', received_at: at, payload: { id: 'job-old', n: 1 } }),
  );

  const registry = createRevocationRegistry(redis, prefix);
  expect(await registry.isKeyRevoked('key_old')).toBe(true);
  expect(await registry.isKeyRevoked(longId)).toBe(true);
  expect(await registry.isKeyRevoked(`${longId}x`)).toBe(false);
  expect(JSON.parse((await p.cli('revoked-keys', '--json')).stdout)).toEqual(
    expect.arrayContaining([
      { id: 'key_old', revoked_at: at, payload: { id: 'key_old', reason: 'leaked' } },
      {
        id: longId.slice(0, 64),
        id_truncated: true,
        revoked_at: at,
        payload: { id: longId, reason: 'leaked' },
      },
    ]),
  );
  expect(JSON.parse((await p.cli('failures', '--json')).stdout)).toEqual([
    expect.objectContaining({ id: 'job-old', received_at: at, payload: { id: 'job-old', n: 1 } }),
  ]);
  // A delivery of it now is the same item: recorded once.
  const log = createFailureLog(redis, prefix);
  expect(await log.record({ event: 'audio.failed', data: { id: 'job-old' } }, at)).toBe(false);
});

it('failed jobs are listed and put back by retry', async () => {
  // No CDN_URL: every download is refused at once, so the job fails for good.
  await p.post(sampleDelivery('audio.ready', { id: 'nowhere' })).expect(202);
  expect(await p.settled('nowhere')).toEqual({
    state: 'failed',
    reason: expect.stringMatching(/not in CDN_URL/),
  });
  const listed = JSON.parse((await p.cli('failed', '--json')).stdout) as {
    id: string;
    attempts: number;
  }[];
  expect(listed).toEqual([expect.objectContaining({ data_id: 'nowhere', attempts: 1 })]);

  // With the worker stopped, the retried job stays where retry put it.
  await p.workers.worker.close();
  const jobId = listed[0]!.id;
  expect(await p.cli('retry', jobId)).toMatchObject({
    code: 0,
    stdout: `job ${jobId} put back on the queue\n`,
  });
  expect(await (await p.receiver.queue.getJob(jobId))!.getState()).toBe('waiting');
  expect(await p.cli('retry', jobId)).toMatchObject({
    code: 1,
    stderr: `audio-webhooks: job ${jobId} is waiting, not failed\n`,
  });
  expect(await p.cli('retry', '--all')).toMatchObject({
    code: 0,
    stdout: '0 failed jobs put back on the queue\n',
  });
});

describe('send', () => {
  let server: Server;
  afterEach(
    () =>
      new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      ),
  );

  it('signs like the provider: the receiver accepts it, then calls it a duplicate', async () => {
    server = createServer(p.receiver.listener).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
    const first = await p.cli('send', 'key.revoked', '--url', url, '--id', 'k1');
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/HTTP 202\n\{"received":true,"duplicate":false\}/);
    const second = await p.cli(
      'send',
      'key.revoked',
      '--url',
      url,
      '--id',
      'k1',
      '--data',
      '{"note":"x"}',
    );
    expect(second.stdout).toMatch(/HTTP 200\n\{"received":true,"duplicate":true\}/);
    const forged = await p.cli('send', 'key.revoked', '--url', url, '--secret', 'wrong');
    expect(forged.code).toBe(1);
    expect(forged.stdout).toMatch(/HTTP 401/);
  });

  it('an unreachable URL is one line and exit 1', async () => {
    server = createServer(p.receiver.listener).listen(0, '127.0.0.1');
    const { code, stdout, stderr } = await p.cli(
      'send',
      'audio.ready',
      '--url',
      'http://127.0.0.1:1/webhooks',
    );
    expect({ code, stdout }).toEqual({ code: 1, stdout: '' });
    expect(stderr).toMatch(/^audio-webhooks: cannot reach http:\/\/127.0.0.1:1\/webhooks: .+\n$/);
  });
});

describe('CLI errors', () => {
  it.each([
    [[]],
    [['bogus']],
    [['failed', '--all']],
    [['retry']],
    [['retry', 'x', '--all']],
    [['send']],
    [['send', 'a', 'b']],
    [['failures', '--nope']],
    [['send', 'key.revoked', '--data', '[1]']],
    [['send', 'key.revoked', '--url', 'notaurl']],
    [['send', 'key.revoked', '--url', 'ftp://127.0.0.1/webhooks']],
  ])('usage error for %j: exit 2 and one line that says where the usage is', async (args) => {
    const { code, stdout, stderr } = await p.cli(...args);
    expect({ code, stdout }).toEqual({ code: 2, stdout: '' });
    expect(stderr).toMatch(/^audio-webhooks: [^\n]+ \(see: audio-webhooks help( [a-z-]+)?\)\n$/);
  });

  it('a missing PROVIDER_BASE_URL is one line saying what to set, not the usage text', async () => {
    let stderr = '';
    const code = await runCli(
      ['voices'],
      { REDIS_URL: process.env.REDIS_URL ?? '' },
      { out: () => undefined },
      { out: (t) => (stderr += t) },
    );
    expect(code).toBe(2);
    expect(stderr).toBe(
      "audio-webhooks: PROVIDER_BASE_URL is not set: set it to the provider's {base_url} (e.g. in .env)\n",
    );
  });

  it.each([[['help']], [['--help']], [['-h']]])(
    '%j prints every command to standard output, exit 0',
    async (args) => {
      const { code, stdout, stderr } = await p.cli(...args);
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
      for (const command of [
        'send',
        'failed',
        'retry',
        'revoked-keys',
        'failures',
        'sandbox',
        'tts',
        'voices',
        'help',
      ]) {
        expect(stdout).toMatch(new RegExp(`^  ${command}\\b`, 'm'));
      }
    },
  );

  it.each([
    [['send', '--help'], /^usage: audio-webhooks send <event> \[--url U\]/],
    [['help', 'retry'], /^usage: audio-webhooks retry <jobId> \| --all\n/],
    [['failed', '--help'], /^usage: audio-webhooks failed \[--json\]\n/],
    [['sandbox', '--help'], /^usage: audio-webhooks sandbox \[--host H\]/],
    [['tts', '--help'], /^usage: audio-webhooks tts "<text>" --voice V --out FILE/],
  ])("%j prints that command's usage, exit 0", async (args, usage) => {
    const { code, stdout } = await p.cli(...args);
    expect(code).toBe(0);
    expect(stdout).toMatch(usage);
  });

  it('send --url notaurl says what is wrong with it', async () => {
    const { stderr } = await p.cli('send', 'key.revoked', '--url', 'notaurl');
    expect(stderr).toMatch(
      /^audio-webhooks: --url must be an http:\/\/ or https:\/\/ URL, not "notaurl" \(see: audio-webhooks help send\)\n$/,
    );
  });

  it('send without --secret or WEBHOOK_SECRETS is a usage error, not a signature with a placeholder', async () => {
    let stderr = '';
    const code = await runCli(
      ['send', 'key.revoked'],
      {},
      { out: () => undefined },
      { out: (t) => (stderr += t) },
    );
    expect(code).toBe(2);
    expect(stderr).toMatch(
      /^audio-webhooks: no signing secret: pass --secret or set WEBHOOK_SECRETS \(see: audio-webhooks help send\)\n$/,
    );
  });

  it('an unreachable Redis is one line and exit 1', async () => {
    let stderr = '';
    const code = await runCli(
      ['failed'],
      { REDIS_URL: 'redis://:hunter2@127.0.0.1:1' },
      { out: () => undefined },
      { out: (t) => (stderr += t) },
    );
    expect(code).toBe(1);
    expect(stderr).toBe(
      'audio-webhooks: cannot reach Redis at redis://:***@127.0.0.1:1: connect ECONNREFUSED 127.0.0.1:1\n',
    );
  });
});
