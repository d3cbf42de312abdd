import { isTempName } from '../storage/temp-name.js';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { pino } from 'pino';
import { join } from 'node:path';
import type { RedisConnection } from '../redis/connections.js';
import { parseSettings, type Config } from '../settings.js';
import { createProviderClient, type ProviderClient } from '../provider/create-provider-client.js';
import {
  NoKeyLeftError,
  ProviderError,
  ProviderUnavailableError,
  RateLimitDeadlineError,
} from '../provider/provider-errors.js';
import { PROVIDER_SETTINGS } from '../provider/provider-settings.js';
import { createStoreCacheArea } from '../provider/store-cache-area.js';
import { createAudioStore } from '../storage/create-audio-store.js';
import { createLocalBlobArea } from '../provider/local-blob-area.js';
import type { BlobArea } from '../provider/tts-cache.js';
import { fileAreaOf, type AudioStore } from '../storage/audio-store.js';
import { loadCustom } from '../load-custom.js';
import { createLogger } from '../telemetry/logger.js';
import { writeAtomically } from '../storage/write-atomically.js';
import { MissingSettingError, OperationalError, UsageError } from './cli-errors.js';
import { printRows, type Output } from './print.js';
import { startProgress } from './progress.js';

/** Under AUDIO_DIR: no audio file's name starts with a dot, so the two never meet. */
const TTS_CACHE_FOLDER = '.tts-cache';

export interface TtsArgs {
  readonly text?: string | undefined;
  readonly voice?: string | undefined;
  readonly out?: string | undefined;
  readonly file?: string | undefined;
  readonly outDir?: string | undefined;
}

const EXTENSIONS: Readonly<Record<string, string>> = {
  'audio/wav': '.wav',
  'audio/x-wav': '.wav',
  'audio/mpeg': '.mp3',
  'audio/ogg': '.ogg',
  'audio/flac': '.flac',
};

/** The client as the CLI builds it: PROVIDER_* settings, the service's Redis and prefix. */
async function withClient<T>(
  env: NodeJS.ProcessEnv,
  config: Config,
  redis: RedisConnection,
  work: (client: ProviderClient) => Promise<T>,
): Promise<T> {
  const settings = parseSettings(PROVIDER_SETTINGS, env);
  const baseUrl = settings.providerBaseUrl;
  const keys = settings.providerApiKeys;
  if (baseUrl === undefined)
    throw new MissingSettingError(
      "PROVIDER_BASE_URL is not set: set it to the provider's {base_url} (e.g. in .env)",
    );
  if (keys.length === 0)
    throw new MissingSettingError(
      'PROVIDER_API_KEYS is not set: set it to key_id=token[,key_id=token…] (e.g. in .env)',
    );
  const logger = createLogger('warn', pino.destination(2));
  // The TTS bodies go where every host of the deployment reads them (the store's), or a host
  // would call again for what another host cached; a store without such a place keeps them in
  // AUDIO_DIR, shared only when AUDIO_DIR is.
  const store = await createAudioStore(config, {
    custom: loadCustom().createStore,
    logger,
    writable: false,
  });
  const client = await createProviderClient({
    baseUrl,
    keys,
    redis,
    prefix: config.queuePrefix,
    limits: settings.providerLimits,
    windowMs: settings.providerRateWindowMs,
    cacheTtlSeconds: settings.ttsCacheTtlSeconds,
    cacheArea: cacheAreaIn(store, config.audioDir),
    logger,
  });
  try {
    return await work(client);
  } catch (error: unknown) {
    if (
      error instanceof NoKeyLeftError ||
      error instanceof ProviderError ||
      error instanceof ProviderUnavailableError ||
      error instanceof RateLimitDeadlineError
    ) {
      throw new OperationalError(error.message);
    }
    throw error;
  } finally {
    await client.close();
  }
}

/** `tts "<text>" --voice V --out FILE` or `tts --file LINES --voice V --out-dir DIR`. */
export async function runTts(
  args: TtsArgs,
  env: NodeJS.ProcessEnv,
  config: Config,
  redis: RedisConnection,
  output: Output,
  errors: Output & { readonly isTTY?: boolean },
): Promise<number> {
  const voice = args.voice;
  if (voice === undefined) throw new UsageError('tts needs --voice');
  if (args.file === undefined) {
    if (args.text === undefined || args.out === undefined) {
      throw new UsageError(
        'tts takes "<text>" --voice V --out FILE, or --file LINES --voice V --out-dir DIR',
      );
    }
    const { text, out } = args;
    return withClient(env, config, redis, async (client) => {
      const result = await client.tts({ text, voice });
      await writeAtomically(out, result.audio);
      output.out(
        `wrote ${out} (${result.audio.length} bytes${result.cached ? ', from the cache' : ''})\n`,
      );
      return 0;
    });
  }
  if (args.outDir === undefined || args.text !== undefined || args.out !== undefined) {
    throw new UsageError('tts --file LINES takes --voice V --out-dir DIR');
  }
  const { file, outDir } = args;
  const lines = (await readFile(file, 'utf8')).split(/\r?\n/);
  const work = lines.flatMap((text, index) =>
    text.trim() === '' ? [] : [{ text, number: index + 1 }],
  );
  await mkdir(outDir, { recursive: true });
  // Resumable: a line whose file is already there (written whole: see writeAtomically) is done.
  const done = new Set(
    (await readdir(outDir)).filter((name) => !isTempName(name)).map((name) => name.split('.')[0]),
  );
  const todo = work.filter((item) => !done.has(String(item.number).padStart(4, '0')));
  return withClient(env, config, redis, async (client) => {
    const progress = startProgress(
      errors,
      'tts {bar} {value}/{total} | {rate}/s | ETA {eta_formatted}',
      todo.length,
      { rate: '0.0' },
    );
    const started = performance.now();
    let written = 0;
    // One request at a time: the provider's advice for batches over 10 (docs/provider.md, "Rate limits").
    for (const item of todo) {
      const result = await client.tts({ text: item.text, voice });
      const name = `${String(item.number).padStart(4, '0')}${EXTENSIONS[result.contentType.split(';')[0] ?? ''] ?? '.bin'}`;
      await writeAtomically(join(outDir, name), result.audio);
      written++;
      const rate = (written / ((performance.now() - started) / 1000)).toFixed(1);
      progress.update(
        written,
        { rate },
        `${written}/${todo.length} ${name}${result.cached ? ' (cached)' : ''}`,
      );
    }
    progress.stop();
    output.out(`${written} written, ${work.length - todo.length} already there, in ${outDir}\n`);
    return 0;
  });
}

/** `voices [--json]`. */
export async function runVoices(
  json: boolean,
  env: NodeJS.ProcessEnv,
  config: Config,
  redis: RedisConnection,
  output: Output,
): Promise<number> {
  return withClient(env, config, redis, async (client) => {
    const answer = (await client.voices()) as { voices?: unknown };
    const voices = Array.isArray(answer.voices) ? (answer.voices as Record<string, unknown>[]) : [];
    printRows(output, voices, ['id', 'name'], json);
    return 0;
  });
}

/** The TTS cache's bodies: in the store's small-files area, else in a folder of AUDIO_DIR. */
function cacheAreaIn(store: AudioStore, audioDir: string): BlobArea {
  const area = fileAreaOf(store);
  return area === undefined
    ? createLocalBlobArea(join(audioDir, TTS_CACHE_FOLDER))
    : createStoreCacheArea(area);
}
