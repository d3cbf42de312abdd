/**
 * The stores' and the downloads' sections as printed, and their targets: each against its
 * baseline of the same run (the naive workers; the plain download; bare undici's memory).
 */
import type { runDownloads } from './downloads.js';
import { ratio } from './lib.js';
import { exact, pairedText, type Section, type Target } from './section.js';
import type { StoresResult } from './stores.js';

export type Downloads = Awaited<ReturnType<typeof runDownloads>>;

/** RSS growth for a 200 MB file may exceed bare undici's own growth by this much, in MB. */
const RSS_ABOVE_BARE_MB = 16;

export function storesSection(stores: StoresResult, downloads: Downloads): Section<StoresResult> {
  const line = (name: string, run: StoresResult['local'], perSecond: number, toNaive?: number) =>
    `| ${name} | ${run.seconds} | ${perSecond} | ${toNaive ?? 1} | ${run.audioFiles} / ${run.metadataFiles} / ${run.archiveEntries} | ${run.failedJobs} | ${run.workerCpuSeconds} | ${run.workerCpuMsPerItem} |`;
  const big = stores.s3Downloads;
  const ips = stores.itemsPerSecond;
  const targets: Target[] = [
    [
      `end to end, local store ≥ 0.5 × the naive worker's items/s (WORKER_CONCURRENCY=${stores.workerConcurrency})`,
      stores.localToNaive.median >= 0.5,
      `${pairedText(stores.localToNaive)} (medians ${ips.local} / ${ips.naive} items/s)`,
    ],
    [
      `end to end, S3 ≥ 0.9 × the naive S3 worker writing both objects (same gateway on a core of its own, same SDK client settings, WORKER_CONCURRENCY=${stores.s3Concurrency.best})`,
      stores.s3ToNaiveS3.median >= 0.9,
      `${pairedText(stores.s3ToNaiveS3)} (medians ${ips.s3} / ${ips.naiveS3} items/s; gateway requests per item ${stores.s3.gatewayRequestsPerItem} / ${stores.naiveS3.gatewayRequestsPerItem}; the naive worker writing the audio alone: ${ips.naiveS3AudioOnly} items/s)`,
    ],
    [
      'worker CPU per item, local store ≤ 1.5 × the durable naive worker (temp file, fsync, rename, both files; the directory fsynced)',
      stores.localCpuToDurable.median <= 1.5,
      `${pairedText(stores.localCpuToDurable)} (the median runs' ${stores.local.workerCpuMsPerItem} / ${stores.durable.workerCpuMsPerItem} ms; the naive worker, a ceiling: ${stores.naive.workerCpuMsPerItem} ms)`,
    ],
    [
      'worker CPU per item, S3 ≤ 1.5 × the naive S3 worker writing both objects',
      stores.s3CpuToNaiveS3.median <= 1.5,
      `${pairedText(stores.s3CpuToNaiveS3)} (the median runs' ${stores.s3.workerCpuMsPerItem} / ${stores.naiveS3.workerCpuMsPerItem} ms)`,
    ],
    [
      'end to end into S3: 9,000 audio, 9,000 metadata objects and 9,000 archive entries, 0 failed jobs',
      stores.s3.audioFiles === 9000 &&
        stores.s3.metadataFiles === 9000 &&
        stores.s3.archiveEntries === 9000 &&
        stores.s3.failedJobs === 0,
      `${stores.s3.audioFiles} / ${stores.s3.metadataFiles} / ${stores.s3.archiveEntries}, ${stores.s3.failedJobs} failed`,
    ],
    [
      'large files into S3 ≥ 0.9 × a plain stream to the same gateway (undici → SHA-256 → one streamed PutObject)',
      big.s3MBps >= 0.9 * big.plainPutMBps,
      `${exact(big.s3MBps, big.plainPutMBps)} (${big.s3MBps} / ${big.plainPutMBps} MB/s; \`curl -T\`, the ceiling: ${big.curlPutMBps ?? 'n/a'} MB/s)`,
    ],
    [
      `RSS growth for a ${downloads.bigFileMb} MB file into S3 ≤ bare undici's for the same download + ${RSS_ABOVE_BARE_MB} MB`,
      big.rssGrowthMb <= downloads.rssGrowthBareUndiciMb + RSS_ABOVE_BARE_MB,
      `${big.rssGrowthMb} MB against ${downloads.rssGrowthBareUndiciMb} + ${RSS_ABOVE_BARE_MB} MB`,
    ],
  ];
  return {
    title: `Stores side by side (${stores.local.deliveries} deliveries, ${stores.local.duplicates} duplicates, 64 KB; WORKER_CONCURRENCY=${stores.workerConcurrency} local, ${stores.s3Concurrency.best} S3)`,
    figures: stores,
    lines: [
      `WORKER_CONCURRENCY for S3, measured with ${stores.s3Concurrency.deliveries} deliveries each: ${stores.s3Concurrency.runs.map((r) => `${r.concurrency} → ${r.filesPerSecond} items/s`).join(', ')}; fastest: ${stores.s3Concurrency.best}`,
      '',
      `The S3 runs: ${stores.pinned}. The local runs, three rounds in different orders, items/s (the median of each is in the table): naive ${stores.localRounds.naive.join(', ')}; durable naive ${stores.localRounds.durable.join(', ')}; service ${stores.localRounds.local.join(', ')}; service, archive off ${stores.localRounds.localNoArchive.join(', ')}; the S3 runs, likewise: naive S3 ${stores.s3Rounds.naiveS3.join(', ')}; service ${stores.s3Rounds.s3.join(', ')}; service, archive off ${stores.s3Rounds.s3NoArchive.join(', ')}`,
      '',
      '| worker | seconds | items/s | × its naive worker | audio / metadata / archive stored | failed jobs | worker CPU s | worker CPU ms per item |',
      '|---|---|---|---|---|---|---|---|',
      line('naive (fetch → write, no checks, no fsync; a ceiling)', stores.naive, ips.naive),
      line(
        'durable naive (fetch → temp file → fsync → rename, both files; the directory fsynced)',
        stores.durable,
        ips.durable,
        ratio(ips.durable, ips.naive),
      ),
      line(
        'naive S3 (fetch → two PutObjects: audio and metadata, same SDK client)',
        stores.naiveS3,
        ips.naiveS3,
      ),
      line(
        'naive S3, the audio alone (one run, for information)',
        stores.naiveS3AudioOnly,
        ips.naiveS3AudioOnly,
      ),
      line(
        'service, local store',
        stores.local,
        ips.local,
        Number(stores.localToNaive.median.toFixed(2)),
      ),
      line(
        'service, S3 (Ceph RGW)',
        stores.s3,
        ips.s3,
        Number(stores.s3ToNaiveS3.median.toFixed(2)),
      ),
      line(
        'service, local store, archive off (ARCHIVE_RETENTION_HOURS=0)',
        stores.localNoArchive,
        ips.localNoArchive,
        ratio(ips.localNoArchive, ips.naive),
      ),
      line(
        'service, S3, archive off (ARCHIVE_RETENTION_HOURS=0)',
        stores.s3NoArchive,
        ips.s3NoArchive,
        ratio(ips.s3NoArchive, ips.naiveS3),
      ),
      '',
      `Gateway requests per stored item, first POST to last job: naive S3 ${stores.naiveS3.gatewayRequestsPerItem}, the audio alone ${stores.naiveS3AudioOnly.gatewayRequestsPerItem}, service ${stores.s3.gatewayRequestsPerItem}, archive off ${stores.s3NoArchive.gatewayRequestsPerItem}`,
      '',
      `Large files into S3: ${big.files} × ${big.fileMb} MB at ${big.s3MBps} MB/s through the worker's code (a plain stream, undici → SHA-256 → one PutObject: ${big.plainPutMBps} MB/s; \`curl -T\` of the same files to the same gateway: ${big.curlPutMBps ?? 'n/a'} MB/s, ratio ${big.curlPutMBps === null ? 'n/a' : ratio(big.s3MBps, big.curlPutMBps)}); peak RSS growth for one ${downloads.bigFileMb} MB file into S3: ${big.rssGrowthMb} MB (into the local store: ${downloads.rssGrowthMb} MB; bare undici: ${downloads.rssGrowthBareUndiciMb} MB); medians of three alternated rounds, MB/s: worker ${big.rounds.ours.join(', ')}; plain ${big.rounds.plain.join(', ')}; \`curl -T\` ${big.rounds.curl.join(', ')}`,
    ],
    targets,
  };
}

export function downloadsSection(d: Downloads): Section<Downloads> {
  return {
    title: 'Downloads',
    figures: d,
    lines: [
      `${d.files} × ${d.fileMb} MB: the worker's code ${d.oursMBps} MB/s; the plain baseline (undici → SHA-256 → a file, fsynced) ${d.plainMBps} MB/s (ratio ${ratio(d.oursMBps, d.plainMBps)}); ceilings: bare undici discarding the body ${d.bareUndiciMBps} MB/s, curl to /dev/null ${d.curlMBps ?? 'n/a'} MB/s. Peak RSS growth for one ${d.bigFileMb} MB file: ${d.rssGrowthMb} MB (one ${d.fileMb} MB file: ${d.rssGrowthSmallFileMb} MB; bare undici discarding the ${d.bigFileMb} MB file: ${d.rssGrowthBareUndiciMb} MB). Medians of three alternated rounds, MB/s: worker ${d.rounds.ours.join(', ')}; plain ${d.rounds.plain.join(', ')}; curl ${d.rounds.curl.join(', ')}; bare undici ${d.rounds.bare.join(', ')}`,
    ],
    targets: [
      [
        "downloads through the worker's own code ≥ 0.9 × the plain baseline (undici → SHA-256 → a file, fsynced)",
        d.oursMBps >= 0.9 * d.plainMBps,
        `${exact(d.oursMBps, d.plainMBps)} (${d.oursMBps} / ${d.plainMBps} MB/s; bare undici ${d.bareUndiciMBps}, curl ${d.curlMBps ?? 'n/a'} MB/s)`,
      ],
      [
        `RSS growth for a ${d.bigFileMb} MB file into the local store ≤ bare undici's for the same download + ${RSS_ABOVE_BARE_MB} MB`,
        d.rssGrowthMb <= d.rssGrowthBareUndiciMb + RSS_ABOVE_BARE_MB,
        `${d.rssGrowthMb} MB against ${d.rssGrowthBareUndiciMb} + ${RSS_ABOVE_BARE_MB} MB`,
      ],
    ],
  };
}
