import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

/**
 * What `replay` costs over a busy archive: ENTRIES deliveries archived in ONE hour (the receiver
 * takes thousands a second, so an hour can hold millions) by WRITERS workers, each with the
 * checkout's own archive writer into AUDIO_DIR's archive, then `replay --id` of one of them and
 * a dry run of the whole hour, each a CLI process of its own, timed with its peak RSS (GNU time's
 * %M). The same two commands over an empty archive are the baseline the growth is measured from.
 * The code measured is the checkout at `root` (its dist/ and bin/), so an older checkout can be
 * measured the same way for a before/after.
 */
export interface ArchiveQueriesResult {
  readonly entries: number;
  readonly byId: {
    readonly seconds: number;
    readonly peakRssMb: number;
    readonly growthMb: number;
  };
  readonly hourDryRun: {
    readonly seconds: number;
    readonly peakRssMb: number;
    readonly growthMb: number;
    readonly listed: number;
  };
}

const HOUR = '2026-11-24T09';
/** Worker processes archiving the hour, each through an archive of its own (its own segments). */
const WRITERS = 4;
/** Records in flight per writer, as a worker's WORKER_CONCURRENCY jobs archive at once. */
const RECORDS_IN_FLIGHT = 64;
const run = promisify(execFile);

/** The parts of a checkout's archive the bench writes through. */
interface ArchiveModules {
  createArchive(area: unknown): {
    record(entry: { delivery: unknown; jobId: string; receivedAt: string }): Promise<void>;
  };
  createLocalFileArea(root: string): unknown;
}

export async function runArchiveQueries(
  root = join(__dirname, '..', '..'),
  entries = 200_000,
): Promise<ArchiveQueriesResult> {
  /* eslint-disable @typescript-eslint/no-require-imports -- the checkout measured is chosen at run time */
  const modules = {
    ...(require(join(root, 'dist', 'archive', 'archive.js')) as Pick<
      ArchiveModules,
      'createArchive'
    >),
    ...(require(join(root, 'dist', 'storage', 'local', 'local-file-area.js')) as Pick<
      ArchiveModules,
      'createLocalFileArea'
    >),
  };
  /* eslint-enable @typescript-eslint/no-require-imports */
  const dir = mkdtempSync(join(tmpdir(), 'aw-bench-archive-'));
  const empty = mkdtempSync(join(tmpdir(), 'aw-bench-archive-empty-'));
  try {
    process.stderr.write(`archive queries: writing ${entries} entries into one hour\n`);
    const writers = Array.from({ length: WRITERS }, () =>
      modules.createArchive(modules.createLocalFileArea(join(dir, '.archive'))),
    );
    let next = 0;
    const record = async () => {
      for (let i = next++; i < entries; i = next++) {
        const ms = Math.floor((i * 3_600_000) / entries);
        const receivedAt = new Date(Date.parse(`${HOUR}:00:00.000Z`) + ms).toISOString();
        const id = `item-${i}`;
        await writers[i % WRITERS]?.record({
          delivery: { event: 'audio.failed', data: { id } },
          jobId: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
          receivedAt,
        });
      }
    };
    await Promise.all(Array.from({ length: WRITERS * RECORDS_IN_FLIGHT }, record));
    const cli = async (audioDir: string, args: string[]) => {
      const started = performance.now();
      const { stdout, stderr } = await run(
        '/usr/bin/time',
        ['-f', 'peak-kb %M', process.execPath, join(root, 'bin', 'audio-webhooks.js'), ...args],
        {
          env: {
            PATH: process.env.PATH ?? '',
            AUDIO_DIR: audioDir,
            WEBHOOK_SECRETS: 'whsec_bench',
            LOG_LEVEL: 'warn',
          },
          maxBuffer: 256 << 20,
        },
      ).catch((error: unknown) => {
        // A non-zero exit still reports its output and GNU time's line.
        const failed = error as { stdout?: string; stderr?: string };
        return { stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
      });
      const seconds = (performance.now() - started) / 1000;
      const peakKb = Number(/peak-kb (\d+)/.exec(stderr)?.[1]);
      return {
        seconds: Math.round(seconds * 100) / 100,
        peakRssMb: Math.round(peakKb / 102.4) / 10,
        stdout,
      };
    };
    const byIdArgs = ['replay', '--id', `item-${Math.floor(entries / 2)}`, '--dry-run', '--json'];
    const hourArgs = [
      'replay',
      '--since',
      `${HOUR}:00:00Z`,
      '--until',
      `${HOUR}:59:59.999Z`,
      '--dry-run',
      '--json',
    ];
    const byIdBase = await cli(empty, byIdArgs);
    const hourBase = await cli(empty, hourArgs);
    process.stderr.write('archive queries: replay --id\n');
    const byId = await cli(dir, byIdArgs);
    process.stderr.write('archive queries: a dry run of the hour\n');
    const hour = await cli(dir, hourArgs);
    const listed = (JSON.parse(hour.stdout || '[]') as unknown[]).length;
    const growth = (a: number, b: number) => Math.round((a - b) * 10) / 10;
    return {
      entries,
      byId: {
        seconds: byId.seconds,
        peakRssMb: byId.peakRssMb,
        growthMb: growth(byId.peakRssMb, byIdBase.peakRssMb),
      },
      hourDryRun: {
        seconds: hour.seconds,
        peakRssMb: hour.peakRssMb,
        growthMb: growth(hour.peakRssMb, hourBase.peakRssMb),
        listed,
      },
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(empty, { recursive: true, force: true });
  }
}

/** `node dist-bench/bench/archive-queries.js [ROOT] [ENTRIES]`: one checkout's figures alone. */
if (require.main === module) {
  void runArchiveQueries(
    process.argv[2],
    process.argv[3] === undefined ? undefined : Number(process.argv[3]),
  ).then((result) => process.stdout.write(`${JSON.stringify(result)}\n`));
}
