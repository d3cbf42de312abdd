import type { Dispatcher } from 'undici';
import type { Logger } from 'pino';
import type { DownloadSettings } from '../config/download-settings.js';
import { PermanentDownloadError } from '../download/download-errors.js';
import {
  Meter,
  classifyNetworkError,
  openDownload,
  type OpenedDownload,
} from '../download/open-download.js';
import { isFinal } from '../jobs/retry-policy.js';
import type { AudioDetails, AudioMetadata, AudioStore } from '../storage/audio-store.js';
import { audioExtension, fileStem } from '../storage/file-name.js';
import { NameCollisionError, StorageError } from '../storage/storage-errors.js';
import { inSpan } from '../telemetry/tracing.js';
import { timeoutSignal } from '../util/deadline.js';
import type { DownloadMetrics } from './worker-metrics.js';
import type { DeliveryInfo, DownloadAudioOptions } from '../hooks/hook-context.js';

export interface AudioDownloaderDeps {
  readonly config: Pick<DownloadSettings, 'cdnOrigins' | 'downloadMaxBytes' | 'downloadTimeoutMs'>;
  readonly store: AudioStore;
  /** The SSRF-guarded undici Agent (download/guarded-agent.ts). */
  readonly dispatcher: Dispatcher;
  /** Where downloads and their bytes are counted. @defaultValue none */
  readonly metrics?: DownloadMetrics;
}

/**
 * Downloads audio into the store: only from CDN_URL's origins, through the SSRF-guarded agent,
 * within DOWNLOAD_MAX_BYTES and DOWNLOAD_TIMEOUT_MS, streamed into an atomic write while its
 * SHA-256 is computed; then `<stem>.json`, written last, so its presence means the audio beside
 * it is whole. Idempotent: when an earlier run left the file with its recorded size and SHA-256,
 * nothing is fetched again. A stem that already holds another id's audio is a collision and
 * fails the job; nothing is overwritten. Resolves to the metadata as stored.
 */
export function createAudioDownloader(
  deps: AudioDownloaderDeps,
): (
  url: string,
  options: DownloadAudioOptions,
  delivery: DeliveryInfo,
  logger: Logger,
) => Promise<AudioMetadata> {
  return async (url, { id, details }, delivery, logger) => {
    const stem = fileStem(id);
    // A store whose write refuses another item's name needs no look before a job's first run,
    // where no earlier run of the job can have stored anything: one request per item fewer in
    // S3 (a fourth of them). Every later run looks first, so what a run stored is never fetched
    // again; and a first run whose download fails looks then, so an item stored by another job
    // (a re-delivery past the dedupe window, its URL expired) is still found.
    const lookFirst = !delivery.firstRun || deps.store.refusesOtherItems !== true;
    let earlier: AudioMetadata | undefined;
    let audio: AudioMetadata;
    try {
      earlier = lookFirst ? await stored(deps.store, stem, id) : undefined;
      audio = earlier ?? (await download(deps, url, stem, { id, details, delivery }));
    } catch (error: unknown) {
      earlier = lookFirst ? undefined : await stored(deps.store, stem, id).catch(() => undefined);
      if (earlier === undefined) {
        deps.metrics?.downloads.inc({ result: isFinal(error) ? 'permanent' : 'transient' });
        throw error;
      }
      audio = earlier;
    }
    const done = audio === earlier;
    deps.metrics?.downloads.inc({ result: done ? 'already_stored' : 'stored' });
    logger.info(
      // The job's logger carries the id already: a second `id` key made the line ambiguous JSON.
      { file: audio.file, bytes: audio.bytes },
      done ? 'audio already downloaded' : 'audio downloaded',
    );
    return audio;
  };
}

/**
 * The item's metadata when the store holds it whole (its recorded size and SHA-256); undefined
 * when it holds none; a collision when the name holds another id's item.
 */
async function stored(
  store: AudioStore,
  stem: string,
  id: string,
): Promise<AudioMetadata | undefined> {
  const previous = await store.readMetadata(stem);
  if (previous === undefined) return undefined;
  if (previous.id !== id) throw new NameCollisionError(stem, previous.id, id);
  return (await store.holds(previous.file, previous.bytes, previous.sha256)) ? previous : undefined;
}

async function download(
  { config, store, dispatcher, metrics }: AudioDownloaderDeps,
  audioUrl: string,
  stem: string,
  item: { id: string; details: AudioDetails | undefined; delivery: DeliveryInfo },
): Promise<AudioMetadata> {
  const url = parseUrl(audioUrl);
  const { signal, clear } = timeoutSignal(config.downloadTimeoutMs);
  // The host only: a CDN URL's query may hold a signed token.
  const server = { 'server.address': url.hostname };
  // What came from the CDN, counted whether or not the write then succeeds.
  let fetched: Meter | undefined;
  let body: OpenedDownload['body'] | undefined;
  try {
    const opened = await inSpan('audio.download', server, () =>
      openDownload(audioUrl, {
        allowedOrigins: config.cdnOrigins,
        dispatcher,
        maxBytes: config.downloadMaxBytes,
        signal,
      }),
    );
    body = opened.body;
    const file = `${stem}${audioExtension(url, opened.contentType)}`;
    const meter = new Meter(config.downloadMaxBytes);
    fetched = meter;
    const audio = {
      name: file,
      source: meter.measure(opened.body),
      options: {
        id: item.id,
        entryDurableLater: true,
        contentType: opened.contentType,
        ...(opened.bytes === undefined ? {} : { bytes: opened.bytes }),
      },
    };
    let made: AudioMetadata | undefined;
    // Made once the audio's source has ended: its size and SHA-256 are known then.
    const metadata = {
      name: `${stem}.json`,
      bytes: () => {
        made = {
          id: item.id,
          event: item.delivery.event,
          ...item.details,
          audio_url: audioUrl,
          final_url: opened.url.href,
          file,
          bytes: meter.bytes,
          sha256: meter.sha256(),
          content_type: opened.contentType,
          downloaded_at: new Date().toISOString(),
          received_at: item.delivery.receivedAt,
          job_id: item.delivery.jobId,
        };
        return Buffer.from(`${JSON.stringify(made, null, 2)}\n`);
      },
    };
    const withMetadata = store.writeWithMetadata?.bind(store);
    // The body streams from the CDN into the store: this span is the transfer and the write
    // (and, where the store writes both at once, the metadata's).
    await inSpan('audio.write', { 'file.name': file }, async (span) => {
      await (withMetadata === undefined
        ? store.write(audio.name, audio.source, audio.options)
        : withMetadata(audio, metadata));
      span?.setAttribute('file.size', meter.bytes);
    });
    // Written last: its presence means the audio beside it is complete.
    if (withMetadata === undefined)
      await inSpan('audio.write_metadata', { 'file.name': metadata.name }, () =>
        store.write(metadata.name, [metadata.bytes()], { id: item.id }),
      );
    if (made === undefined) throw new Error(`the store wrote no ${metadata.name}`);
    return made;
  } catch (error: unknown) {
    // The store's own verdicts stay theirs: retried (a StorageError) or final (a refusal, a
    // collision).
    if (error instanceof StorageError || error instanceof NameCollisionError) throw error;
    throw classifyNetworkError(error, signal);
  } finally {
    // A store that failed before reading the body to its end (one that refused at once, say)
    // left it open: its connection goes now, not when the deadline would have ended it (its
    // timer ends here). Destroying a body read to its end does nothing.
    body?.destroy();
    clear();
    metrics?.downloadBytes.inc(fetched?.bytes ?? 0);
  }
}

function parseUrl(value: string): URL {
  try {
    return new URL(value);
  } catch {
    throw new PermanentDownloadError('the audio URL is not a URL');
  }
}
