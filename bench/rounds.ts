/**
 * Rounds of end-to-end runs, alternated: each kind once per round, each round in its own order,
 * each run on an emptied Redis, so no kind always follows the same one (the writeback, the warm
 * or cold caches it leaves behind).
 */
import { perSecond, type EndToEndResult } from './end-to-end.js';
import { alternated, medianBy } from './lib.js';

/**
 * Each round's order, as positions in the list of kinds (the first the baseline). Three kinds:
 * each of the other two follows the baseline once, and the baseline runs last once. In a first
 * run of the local rounds in one order, the service with the archive, always right after the
 * naive worker, looked slower; the whole run that followed, in these orders, measured it slower
 * in the rounds where it did not follow it too. Four kinds: each starts a round once but the
 * fourth, and each runs last once but the second.
 */
const ORDERS: Readonly<Record<number, readonly (readonly number[])[]>> = {
  3: [
    [0, 1, 2],
    [0, 2, 1],
    [1, 2, 0],
  ],
  4: [
    [0, 1, 2, 3],
    [1, 2, 3, 0],
    [2, 3, 0, 1],
  ],
};

/** Three rounds of three or four kinds of end-to-end run, in ORDERS, each on an emptied Redis. */
export async function inRounds<Kind extends string, Run extends EndToEndResult>(
  runs: Record<Kind, () => Promise<Run>>,
  names: Record<Kind, string>,
  fresh: () => Promise<void>,
): Promise<Record<Kind, Run[]>> {
  const kinds = Object.keys(runs) as Kind[];
  const orders = ORDERS[kinds.length];
  if (orders === undefined) throw new Error(`no orders for ${kinds.length} kinds`);
  const done = new Map<Kind, number>();
  const announced = (kind: Kind) => async () => {
    done.set(kind, (done.get(kind) ?? 0) + 1);
    process.stderr.write(`stores: ${names[kind]} (round ${done.get(kind)} of ${orders.length})\n`);
    await fresh();
    return runs[kind]();
  };
  return alternated(
    Object.fromEntries(kinds.map((kind) => [kind, announced(kind)])) as typeof runs,
    orders.map((order) => order.map((position) => kinds[position] as Kind)),
  );
}

/** The run of median items/s. */
export function medianRun<Run extends EndToEndResult>(runs: readonly Run[]): Run {
  const median = medianBy(runs, perSecond);
  if (median === undefined) throw new Error('no runs');
  return median;
}
