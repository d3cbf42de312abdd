import { pino } from 'pino';
import type { Config } from '../settings.js';
import {
  createArchive,
  hourFolder,
  type ArchivedDelivery,
  type ArchiveQuery,
  type UnreadableEntry,
} from '../archive/archive.js';
import { replayDeliveries, type ReplayOptions } from '../archive/replay.js';
import { loadCustom } from '../load-custom.js';
import { createLogger } from '../telemetry/logger.js';
import { createDeliveryQueues } from '../queue/delivery-queue.js';
import type { RedisConnection } from '../redis/connections.js';
import { deliveryTimeline, timelineTtlMs } from '../history/delivery-timeline.js';
import { fileAreaOf, type FileArea } from '../storage/audio-store.js';
import { createAudioStore } from '../storage/create-audio-store.js';
import { OperationalError, UsageError } from './cli-errors.js';
import type { Output } from './print.js';
import { printable } from '../util/printable.js';
import { counted } from '../util/counted.js';
import { startProgress } from './progress.js';

export const REPLAY_FLAGS = ['id', 'since', 'until', 'event', 'dry-run', 'json', 'yes'] as const;

export interface ReplayArgs {
  readonly ids: readonly string[];
  readonly since: string | undefined;
  readonly until: string | undefined;
  readonly event: string | undefined;
  readonly dryRun: boolean;
  readonly json: boolean;
  /** `--yes`: no question on a terminal. */
  readonly yes?: boolean;
}

/** Where the command reports progress; `confirm` is there when a person can answer (a terminal). */
export type ReplayErrors = Output & {
  readonly isTTY?: boolean;
  readonly confirm?: (question: string) => Promise<boolean>;
};

const UNIT_MS: Readonly<Record<string, number>> = { m: 60_000, h: 3_600_000, d: 86_400_000 };
const ISO = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * `--since` / `--until`: an ISO 8601 time (a date alone is its midnight; a time without a zone
 * is UTC, as every time the service writes is) or a duration back from now: `90m`, `2h`, `3d`.
 */
export function parseWhen(flag: string, text: string, now: Date): Date {
  const ago = /^(\d{1,6})([mhd])$/.exec(text);
  if (ago !== null) return new Date(now.getTime() - Number(ago[1]) * (UNIT_MS[ago[2] ?? ''] ?? 0));
  const iso = ISO.exec(text);
  const when =
    iso === null
      ? Number.NaN
      : Date.parse(text.length === 10 || iso[1] !== undefined ? text : `${text}Z`);
  if (Number.isNaN(when) || !isCalendarDate(text.slice(0, 10))) {
    throw new UsageError(
      `--${flag} ${JSON.stringify(text)} is not a time: give an ISO 8601 time (2026-11-24T09:00:00Z) or a duration back from now (90m, 2h, 3d)`,
    );
  }
  return new Date(when);
}

/** `2026-02-30` is no date: Date.parse rolls it over to March 2, so the day is checked back. */
function isCalendarDate(ymd: string): boolean {
  const [y, m, d] = ymd.split('-').map(Number);
  if (y === undefined || m === undefined || d === undefined) return false;
  const date = new Date(Date.UTC(y, m - 1, d));
  return date.getUTCFullYear() === y && date.getUTCMonth() === m - 1 && date.getUTCDate() === d;
}

/** The query the flags ask for; a usage error for a combination that asks nothing or nonsense. */
export function replayQuery(args: ReplayArgs, now: Date): ArchiveQuery {
  if (args.ids.length === 0 && args.since === undefined)
    throw new UsageError('replay takes --id ID (repeatable) or --since WHEN');
  if (args.json && !args.dryRun) throw new UsageError('--json goes with --dry-run');
  if (args.ids.some((id) => id === '')) throw new UsageError('--id must not be empty');
  return {
    ...(args.ids.length === 0 ? {} : { ids: [...new Set(args.ids)] }),
    ...rangeQuery(args, now),
  };
}

/** `--since`, `--until` and `--event` as a query (replay's, `forward test-filter`'s), checked. */
export function rangeQuery(
  args: Pick<ReplayArgs, 'since' | 'until' | 'event'>,
  now: Date,
): ArchiveQuery {
  if (args.event === '') throw new UsageError('--event must not be empty');
  const since = args.since === undefined ? undefined : parseWhen('since', args.since, now);
  const until = args.until === undefined ? undefined : parseWhen('until', args.until, now);
  if (since !== undefined && until !== undefined && since > until)
    throw new UsageError(
      `--since (${since.toISOString()}) is after --until (${until.toISOString()})`,
    );
  return {
    ...(since === undefined ? {} : { since }),
    ...(until === undefined ? {} : { until }),
    ...(args.event === undefined ? {} : { event: args.event }),
  };
}

/**
 * Archive entries that could not be read (not those swept meanwhile), noted while a query runs
 * and then said in one line: left out, never silently.
 */
export function unreadableNotes(errors: Output) {
  const unreadable: UnreadableEntry[] = [];
  return {
    note: (entry: UnreadableEntry) => {
      if (entry.reason !== 'gone') unreadable.push(entry);
    },
    report: () => {
      const [first] = unreadable;
      if (first !== undefined)
        errors.out(
          `audio-webhooks: left out ${counted(unreadable.length, 'archive entry', 'archive entries')} that could not be read (first: ${first.path}: ${first.reason})\n`,
        );
    },
  };
}

/** The files area (where the archive lives) of the store the service writes to, opened to read. */
export async function openFileArea(config: Config): Promise<FileArea> {
  const store = await createAudioStore(config, {
    custom: loadCustom().createStore,
    logger: createLogger('warn', pino.destination(2)),
    writable: false,
  });
  const area = fileAreaOf(store);
  if (area === undefined)
    throw new OperationalError(
      'the audio store keeps no archive (no `files` area): nothing archived to read',
    );
  return area;
}

function row(entry: ArchivedDelivery) {
  return { event: entry.event, id: entry.id, received_at: entry.received_at };
}

/**
 * `replay`: finds the archived deliveries the flags select and puts them on the queue again
 * (archive/replay.ts), or with --dry-run lists them. Ids are checked first: an id with nothing
 * archived stops the command before anything is queued.
 */
export async function runReplay(
  args: ReplayArgs,
  config: Config,
  withRedis: <T>(work: (redis: RedisConnection) => Promise<T>) => Promise<T>,
  output: Output,
  errors: ReplayErrors,
  now = new Date(),
  /** The batch and backlog bounds; archive/replay.ts's defaults unless a test needs a quick stall. */
  limits: Pick<ReplayOptions, 'batchSize' | 'maxBacklog' | 'stalledAfterMs'> = {},
): Promise<number> {
  const asked = replayQuery(args, now);
  // An open range ends where the replay starts: what arrives later is handled as it arrives, and
  // a resume (resumeCommand) then goes on with the same range, not one grown by the wait.
  const query = asked.until === undefined ? { ...asked, until: now } : asked;
  const { note: noteUnreadable, report: reportUnreadable } = unreadableNotes(errors);
  /** The deliveries the query selects, and the hour folders they lie in (the progress bar's). */
  async function select(note = noteUnreadable): Promise<{
    selected: AsyncIterable<ArchivedDelivery> | Iterable<ArchivedDelivery>;
    hours: readonly string[];
  }> {
    const archive = createArchive(await openFileArea(config));
    // A range is streamed, never counted first: a second listing of millions for a bar.
    const hours = await archive.hours(query);
    if (query.ids === undefined) return { selected: archive.find(query, note), hours };
    // Few entries per id: held, so a missing id stops the command before anything changes.
    const found: ArchivedDelivery[] = [];
    for await (const entry of archive.find(query, note)) found.push(entry);
    const missing = query.ids.filter((id) => !found.some((entry) => entry.id === id));
    if (missing.length > 0) {
      const off =
        config.archiveRetentionHours === 0
          ? ' (ARCHIVE_RETENTION_HOURS=0: the archive is off)'
          : ` (the archive keeps ${config.archiveRetentionHours} h)`;
      throw new OperationalError(
        `nothing archived for id ${missing.map((id) => JSON.stringify(id)).join(', ')}${query.event === undefined ? '' : ` and event ${query.event}`}${off}`,
      );
    }
    return { selected: found, hours };
  }

  if (args.dryRun) {
    const { selected } = await select();
    // Streamed, so a dry run of a week lists it without holding it.
    let count = 0;
    if (args.json) output.out('[');
    else output.out(`${'received_at'.padEnd(24)}  ${'event'.padEnd(16)}  id\n`);
    for await (const entry of selected) {
      const { received_at: at, event, id } = entry;
      if (args.json) output.out(`${count === 0 ? '' : ','}${JSON.stringify(row(entry))}`);
      else output.out(`${at.padEnd(24)}  ${printable(event).padEnd(16)}  ${printable(id)}\n`);
      count++;
    }
    if (args.json) output.out(']\n');
    else if (count === 0) output.out('(none)\n');
    reportUnreadable();
    return 0;
  }

  // Redis before the store: an unreachable one is said before the archive is read.
  return withRedis(async (redis) => {
    if (errors.confirm !== undefined && args.yes !== true) {
      // A person at a terminal sees what a replay will do before it does it (hooks run again:
      // mails, uploads). A range is counted by a listing of its own, streamed, only here.
      if (query.ids === undefined) errors.out('replay: counting the archived deliveries…\n');
      let count = 0;
      for await (const _entry of (await select(() => undefined)).selected) count++;
      if (
        count > 0 &&
        !(await errors.confirm(
          `${counted(count, 'archived delivery', 'archived deliveries')} will be put on the queue again (handled as new: hooks run again); continue?`,
        ))
      ) {
        errors.out('audio-webhooks: replay cancelled: nothing was put on the queue\n');
        return 1;
      }
    }
    const { selected, hours } = await select();
    const { queuePrefix: prefix, queueShards: shards } = config; // each delivery to its shard
    const queues = createDeliveryQueues({ connection: redis, prefix, shards });
    const progress = startProgress(
      errors,
      'replay {bar} hour {value}/{total} | {seen} read | queued {queued} | already queued {already}',
      hours.length,
      { seen: '0', queued: '0', already: '0' },
    );
    // The hour of the entry last read: the bar moves by hours, which are known without a count.
    let hour = 0;
    const tracked = (async function* () {
      for await (const entry of selected) {
        const at = hours.indexOf(hourFolder(entry.received_at), hour);
        if (at >= 0) hour = at;
        yield entry;
      }
    })();
    try {
      const done = await replayDeliveries(queues, tracked, {
        ...limits,
        resumeCommand: (from) => resumeCommand(args, query, from),
        timeline: deliveryTimeline(redis, queues[0].layout.placeOf, timelineTtlMs(config)),
        onProgress(step) {
          const waiting =
            step.waitingOnBacklog === undefined
              ? ''
              : `, waiting: ${step.waitingOnBacklog} jobs not yet taken`;
          progress.update(
            hour + 1,
            {
              seen: String(step.seen),
              queued: String(step.queued),
              already: String(step.alreadyQueued),
            },
            `replay: ${step.seen} looked at, ${step.queued} queued, ${step.alreadyQueued} already queued (hour ${hour + 1} of ${hours.length})${waiting}`,
          );
        },
      });
      progress.stop();
      const more = ` (${done.alreadyQueued} more were already queued by a replay still running)`;
      const already = done.alreadyQueued === 0 ? '' : more;
      output.out(
        `${counted(done.queued, 'delivery', 'deliveries')} put on the queue again${already}\n`,
      );
      reportUnreadable();
      return 0;
    } finally {
      progress.stop();
      await Promise.all(queues.map((queue) => queue.close()));
    }
  });
}

/**
 * The command that goes on with exactly what was left of `query`, from `from` (the start of the
 * hour the replay stopped in) on: the same ids, end and event, and the times as absolute ones
 * (`2h` would have moved). That hour may begin before `--since`, which is kept then: a delivery
 * the operator left out stays out.
 */
export function resumeCommand(args: ReplayArgs, query: ArchiveQuery, from: string): string {
  const quote = (text: string) =>
    /^[\w.:@%+=,/-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
  const since =
    query.since !== undefined && query.since.getTime() > Date.parse(from)
      ? query.since.toISOString()
      : from;
  return [
    'audio-webhooks replay',
    ...args.ids.map((id) => `--id ${quote(id)}`),
    `--since ${since}`,
    ...(query.until === undefined ? [] : [`--until ${query.until.toISOString()}`]),
    ...(args.event === undefined ? [] : [`--event ${quote(args.event)}`]),
  ].join(' ');
}
