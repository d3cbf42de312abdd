import { classifyNetworkError, openDownload } from '../../download/open-download.js';
import { Meter } from '../../download/meter.js';
import { inSpan } from '../../telemetry/tracing.js';
import type { AudioMetadata } from '../../storage/audio-store.js';
import { audioExtension, fileStem } from '../../storage/file-name.js';
import { NameCollisionError, StorageError } from '../../storage/storage-errors.js';
import type { AudioReadyEvent } from '../../webhooks/events.js';
import type { JobInfo, WorkerContext } from '../worker-context.js';

/**
 * Downloads the audio to AUDIO_DIR/<stem><ext> and writes AUDIO_DIR/<stem>.json. Idempotent: when
 * an earlier run left the file with its recorded size and SHA-256, nothing is fetched again. A
 * stem that already holds another id's audio is a collision and fails the job; nothing is
 * overwritten.
 */
export async function handleAudioReady(
  event: AudioReadyEvent,
  context: WorkerContext,
  job: JobInfo,
): Promise<AudioMetadata> {
  const stem = fileStem(event.data.id);
  const previous = await context.store.readMetadata(stem);
  if (previous !== undefined && previous.id !== event.data.id) {
    throw new NameCollisionError(stem, previous.id, event.data.id);
  }
  const done =
    previous && (await context.store.holds(previous.file, previous.bytes, previous.sha256));
  const audio = done ? previous : await download(event, stem, context, job);
  context.logger.info(
    { id: audio.id, file: audio.file, bytes: audio.bytes, jobId: job.id },
    done ? 'audio already downloaded' : 'audio downloaded',
  );
  // Hooks run on a re-run too: the run that downloaded may have died before its hook finished.
  await context.hooks.audioReady(event, audio, context);
  return audio;
}

async function download(
  event: AudioReadyEvent,
  stem: string,
  context: WorkerContext,
  job: JobInfo,
): Promise<AudioMetadata> {
  const { config, store } = context;
  const signal = AbortSignal.timeout(config.downloadTimeoutMs);
  const url = new URL(event.data.audio_url);
  // The host only: a CDN URL's query may hold a signed token.
  const server = { 'server.address': url.hostname };
  try {
    const opened = await inSpan('audio.download', server, () =>
      openDownload(event.data.audio_url, {
        allowedOrigins: config.cdnOrigins,
        dispatcher: context.dispatcher,
        maxBytes: config.downloadMaxBytes,
        signal,
      }),
    );
    const file = `${stem}${audioExtension(url, opened.contentType)}`;
    const meter = new Meter(config.downloadMaxBytes);
    // The body streams from the CDN into the file: this span is the transfer and the write.
    await inSpan('audio.write', { 'file.name': file }, async (span) => {
      await store.write(file, meter.measure(opened.body));
      span?.setAttribute('file.size', meter.bytes);
    });
    const metadata: AudioMetadata = {
      id: event.data.id,
      event: event.event,
      kind: event.data.kind,
      voice: event.data.voice,
      created_at: event.data.created_at,
      audio_url: event.data.audio_url,
      final_url: opened.url.href,
      file,
      bytes: meter.bytes,
      sha256: meter.sha256(),
      content_type: opened.contentType,
      downloaded_at: new Date().toISOString(),
      received_at: job.receivedAt,
      job_id: job.id,
    };
    // Written last: its presence means the audio beside it is complete.
    await inSpan('audio.write_metadata', { 'file.name': `${stem}.json` }, () =>
      store.write(`${stem}.json`, [Buffer.from(`${JSON.stringify(metadata, null, 2)}\n`)]),
    );
    return metadata;
  } catch (error: unknown) {
    if (error instanceof StorageError) throw error;
    throw classifyNetworkError(error, signal);
  }
}
