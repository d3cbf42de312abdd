import { createArchive, type ArchivedDelivery } from '../archive/archive.js';
import type { Config } from '../settings.js';
import { compileFilter, type FilterableMessage } from '../forwarding/settings/message-filter.js';
import { counted } from '../util/counted.js';
import { UsageError } from './cli-errors.js';
import type { Output } from './print.js';
import { printable } from '../util/printable.js';
import { openFileArea, rangeQuery, unreadableNotes } from './replay-command.js';

export interface TestFilterArgs {
  /** The filter, as JSON: what a FORWARD_CONFIG destination's `filter` would hold. */
  readonly filter: string;
  readonly since: string | undefined;
  readonly until: string | undefined;
  readonly event: string | undefined;
  readonly json: boolean;
}

/** Matched ids printed: enough to check by eye, bounded however much matches. */
const SHOWN_IDS = 10;

/**
 * What a filter sees of an archived delivery: the message a forward of it would carry, but for
 * `stored` (the archive keeps what was received, not what handling stored) and with the time it
 * was received as `timestamp`.
 */
function filterableOf(entry: ArchivedDelivery): FilterableMessage {
  return {
    type: entry.event,
    id: entry.id,
    timestamp: entry.received_at,
    data: entry.delivery.data,
  };
}

/**
 * `forward test-filter <json>`: runs a filter, compiled as FORWARD_CONFIG's are, over the
 * archived deliveries the flags select (streamed, as `replay --dry-run` reads them), and says
 * how many it matched of how many it read, and the first ids. A filter that would refuse the
 * service's start is a usage error here, with the same words.
 */
export async function runTestFilter(
  args: TestFilterArgs,
  config: Config,
  output: Output,
  errors: Output,
  now = new Date(),
): Promise<number> {
  let raw: unknown;
  try {
    raw = JSON.parse(args.filter);
  } catch {
    throw new UsageError('forward test-filter: the filter is not JSON');
  }
  const filter = compileFilter(raw);
  if ('problem' in filter) throw new UsageError(filter.problem);
  const query = rangeQuery(args, now);
  const unreadable = unreadableNotes(errors);
  const archive = createArchive(await openFileArea(config));
  let read = 0;
  let matched = 0;
  const ids: string[] = [];
  for await (const entry of archive.find(query, unreadable.note)) {
    read++;
    if (!filter.matches(filterableOf(entry))) continue;
    matched++;
    if (ids.length < SHOWN_IDS) ids.push(entry.id);
  }
  if (args.json) output.out(`${JSON.stringify({ read, matched, ids })}\n`);
  else {
    output.out(
      `matched ${matched} of ${counted(read, 'archived delivery', 'archived deliveries')} read\n`,
    );
    if (ids.length > 0)
      output.out(
        `first ${counted(ids.length, 'id', 'ids')} matched:\n${ids.map((id) => printable(id)).join('\n')}\n`,
      );
  }
  unreadable.report();
  return 0;
}
