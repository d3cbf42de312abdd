import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import request from 'supertest';
import { audio, startLocalCdn } from '../helpers/local-cdn';
import { freePort } from '../helpers/private-redis';
import { eventually } from '../helpers/sandbox-process';
import { spawnService } from '../helpers/spawn-service';
import { signed, TEST_SECRET } from '../helpers/test-receiver';

// `npm run local-s3` as a newcomer runs it: the settings it prints run the service against it, a
// delivery lands as an object, and SIGTERM leaves no process and no temp folder behind.
const root = join(__dirname, '..', '..');

it('npm run local-s3: prints the settings, the service stores a delivery with them, SIGTERM leaves nothing', async () => {
  const port = await freePort();
  const child = spawn('npm', ['run', 'local-s3'], {
    cwd: root,
    env: { ...process.env, LOCAL_S3_PORT: String(port), LOCAL_S3_BUCKET: 'try-it' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = once(child, 'exit');
  const settings: Record<string, string> = {};
  const lines: string[] = [];
  for await (const line of createInterface({ input: child.stdout })) {
    if (line === 'ready') break;
    lines.push(line);
    const match = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
    if (match) settings[match[1] ?? ''] = match[2] ?? '';
  }
  // npm's own banner aside, the script's output is the settings, one a line.
  expect(lines.filter((line) => line !== '' && !line.startsWith('> '))).toHaveLength(7);
  expect(settings).toEqual({
    AUDIO_STORE: 's3',
    S3_ENDPOINT: `http://127.0.0.1:${port}`,
    S3_BUCKET: 'try-it',
    S3_FORCE_PATH_STYLE: 'true',
    AWS_ACCESS_KEY_ID: expect.any(String),
    AWS_SECRET_ACCESS_KEY: expect.any(String),
    AWS_REGION: 'us-east-1',
  });
  // Said on standard error, a pipe of its own: read once it has come.
  const dataFolder = await eventually(() =>
    Promise.resolve(/Data folder: (\S+)/.exec(stderr)?.[1]),
  );
  expect(existsSync(dataFolder)).toBe(true);

  const cdn = await startLocalCdn();
  const wav = Buffer.from('RIFF local s3 audio');
  cdn.route('/try.wav', audio(wav, 'audio/wav'));
  const caFile = join(mkdtempSync(join(tmpdir(), 'aw-ca-')), 'ca.pem');
  writeFileSync(caFile, cdn.ca);
  const webPort = await freePort();
  const service = spawnService({
    ...settings,
    WEBHOOK_SECRETS: TEST_SECRET,
    REDIS_URL: process.env.REDIS_URL ?? '',
    QUEUE_PREFIX: `test-local-s3-${String(port)}`,
    PORT: String(webPort),
    HOST: '127.0.0.1',
    CDN_URL: cdn.origin,
    DOWNLOAD_CA_FILE: caFile,
    DOWNLOAD_ALLOW_PRIVATE_IPS: 'true',
  });
  const client = new S3Client({
    region: settings.AWS_REGION ?? '',
    endpoint: settings.S3_ENDPOINT ?? '',
    forcePathStyle: true,
    credentials: {
      accessKeyId: settings.AWS_ACCESS_KEY_ID ?? '',
      secretAccessKey: settings.AWS_SECRET_ACCESS_KEY ?? '',
    },
  });
  try {
    await service.waitForLog('audio-webhooks started');
    const { raw, headers } = signed({
      event: 'audio.ready',
      data: {
        id: 'tried',
        kind: 'tts',
        audio_url: `${cdn.origin}/try.wav`,
        voice: 'alloy',
        created_at: '2026-11-24T10:00:00Z',
      },
    });
    await request(`http://127.0.0.1:${String(webPort)}`)
      .post('/webhooks')
      .set(headers)
      .send(raw)
      .expect(202);
    const stored = await eventually(
      async () => {
        const got = await client
          .send(new GetObjectCommand({ Bucket: 'try-it', Key: 'tried.wav' }))
          .catch(() => undefined);
        return got?.Body === undefined
          ? undefined
          : Buffer.from(await got.Body.transformToByteArray());
      },
      { timeoutMs: 30_000, everyMs: 200 },
    );
    expect(stored.equals(wav)).toBe(true);
  } finally {
    client.destroy();
    service.child.kill('SIGTERM');
    await service.exited;
    await cdn.close();
  }

  child.kill('SIGTERM');
  const [code] = (await exited) as [number | null];
  expect(code).toBe(0);
  expect(existsSync(dataFolder)).toBe(false);
  // No daemon of its left: none names its folder on its command line.
  const left = execFileSync('ps', ['-eo', 'args='], { encoding: 'utf8' })
    .split('\n')
    .filter((args) => args.includes(dataFolder));
  expect(left).toEqual([]);
}, 120_000);
