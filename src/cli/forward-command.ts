import type { Config } from '../config/config.js';
import { UsageError } from './cli-errors.js';
import { forwardControlCommand } from './forward-control-command.js';
import type { Output } from './print.js';
import { runTestFilter } from './test-filter-command.js';
import { withRedis } from './with-redis.js';

export interface ForwardFlags {
  readonly json: boolean;
  readonly since: string | undefined;
  readonly until: string | undefined;
  readonly event: string | undefined;
}

/** `forward <sub>`: test-filter reads the archive; status, pause and resume the destinations' state. */
export async function runForward(
  [sub, ...args]: readonly string[],
  flags: ForwardFlags,
  config: Config,
  output: Output,
  errors: Output,
): Promise<number> {
  if (sub === 'test-filter') {
    if (args.length !== 1 || args[0] === undefined)
      throw new UsageError("forward test-filter takes one filter, as JSON in '…'");
    return await runTestFilter({ ...flags, filter: args[0] }, config, output, errors);
  }
  if ([flags.since, flags.until, flags.event].some((flag) => flag !== undefined))
    throw new UsageError('--since, --until and --event go with forward test-filter');
  if (sub === 'status' || sub === 'pause' || sub === 'resume') {
    if (args.length > 1) throw new UsageError(`forward ${sub}: too many arguments`);
    return await withRedis(config, (redis) =>
      forwardControlCommand(sub, args[0], flags.json, config, redis, output),
    );
  }
  throw new UsageError(
    `forward takes status, pause, resume or test-filter${sub === undefined ? '' : `, not ${sub}`}`,
  );
}
