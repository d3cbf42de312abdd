import type { LocalCdn } from '../harness/local-cdn.js';
import { startCollector, type ExportedSpan } from '../harness/otlp-collector.js';
import { runEndToEnd } from './end-to-end.js';

/** Mean milliseconds per downloaded file, by where the time went. */
export interface Breakdown {
  readonly jobs: number;
  readonly workerConcurrency: number;
  /** The whole job as BullMQ's `process` span sees it. */
  readonly jobMs: number;
  readonly parts: readonly { readonly part: string; readonly ms: number }[];
}

const ms = (span: ExportedSpan) =>
  Number(BigInt(span.endTimeUnixNano) - BigInt(span.startTimeUnixNano)) / 1e6;

/**
 * Where a file's time goes: the end-to-end run again (smaller, traced through OTLP to a local
 * collector), then each job's spans taken apart. Wall time per job, so waiting for the CPU, the
 * thread pool or a shared directory fsync counts where it happens. Tracing costs time of its own,
 * so this run is not the timed one.
 */
export async function runBreakdown(
  redisUrl: string,
  cdn: LocalCdn,
  workerConcurrency: number,
  total = 3000,
): Promise<Breakdown> {
  const collector = await startCollector();
  try {
    process.stderr.write('where the time goes: ');
    await runEndToEnd(redisUrl, cdn, {
      total,
      workerConcurrency,
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
        // Keep every span: the default queue (2,048) drops spans under this load.
        OTEL_BSP_MAX_QUEUE_SIZE: '1000000',
        OTEL_BSP_SCHEDULE_DELAY: '500',
      },
    });
    return breakDown(collector.spans, workerConcurrency);
  } finally {
    await collector.close();
  }
}

export function breakDown(spans: readonly ExportedSpan[], workerConcurrency: number): Breakdown {
  const children = new Map<string, ExportedSpan[]>();
  for (const span of spans) {
    const siblings = children.get(span.parentSpanId ?? '') ?? [];
    siblings.push(span);
    children.set(span.parentSpanId ?? '', siblings);
  }
  const childOf = (parent: ExportedSpan | undefined, name: string) =>
    (parent === undefined ? [] : (children.get(parent.spanId) ?? [])).find((s) => s.name === name);
  /** The named child's duration, 0 when there is none. */
  const total = (parent: ExportedSpan | undefined, name: string) => {
    const child = childOf(parent, name);
    return child === undefined ? 0 : ms(child);
  };

  const sums = new Map<string, number>();
  const add = (part: string, value: number) => sums.set(part, (sums.get(part) ?? 0) + value);
  let jobs = 0;
  let jobMs = 0;
  for (const job of spans.filter((s) => s.role === 'worker' && s.name === 'process deliveries')) {
    const handle = childOf(job, 'webhook.handle');
    const write = childOf(handle, 'audio.write');
    const metadata = childOf(handle, 'audio.write_metadata');
    // A store with writeWithMetadata (the local one) writes the metadata inside audio.write, its
    // temp file and fsync at once with the audio's fsync (`files.sync`).
    const together = childOf(write, 'files.sync');
    if (handle === undefined || write === undefined) continue;
    if (metadata === undefined && together === undefined) continue;
    jobs++;
    jobMs += ms(job);
    const fsyncs = (span: ExportedSpan) =>
      total(span, 'file.fsync') + total(span, 'directory.fsync') + total(span, 'files.sync');
    add('fetch (request to response headers)', total(handle, 'audio.download'));
    add('body transfer and file write', ms(write) - fsyncs(write));
    if (metadata !== undefined) {
      add('metadata file write', ms(metadata) - fsyncs(metadata));
      add('fsync of the two files', total(write, 'file.fsync') + total(metadata, 'file.fsync'));
    } else {
      add(
        'fsync of the audio, with the metadata file written and fsynced at once',
        total(write, 'files.sync'),
      );
    }
    add(
      'directory fsyncs (group commit)',
      total(write, 'directory.fsync') +
        (metadata === undefined ? 0 : total(metadata, 'directory.fsync')),
    );
    add(
      'rest of the handler (metadata lookup, log line, hooks)',
      ms(handle) -
        total(handle, 'audio.download') -
        ms(write) -
        (metadata === undefined ? 0 : ms(metadata)),
    );
    add('Redis: BullMQ completing the job and taking the next', ms(job) - ms(handle));
  }
  const mean = (sum: number) => Math.round((sum / Math.max(1, jobs)) * 100) / 100;
  return {
    jobs,
    workerConcurrency,
    jobMs: mean(jobMs),
    parts: [...sums].map(([part, sum]) => ({ part, ms: mean(sum) })),
  };
}
