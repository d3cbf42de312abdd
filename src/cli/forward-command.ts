import type { Config } from '../settings.js';
import { publicKeyOf } from '../forwarding/senders/forward-signer.js';
import { OperationalError, UsageError } from './cli-errors.js';
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

/**
 * `forward <sub>`: public-key reads FORWARD_SIGNING_KEY; test-filter reads the archive; status,
 * pause and resume the destinations' state.
 */
export async function runForward(
  [sub, ...args]: readonly string[],
  flags: ForwardFlags,
  config: Config,
  output: Output,
  errors: Output,
): Promise<number> {
  if (sub === 'public-key') {
    if (args.length > 0) throw new UsageError('forward public-key takes no arguments');
    return printPublicKeys(config, output);
  }
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
    `forward takes status, pause, resume, public-key or test-filter${sub === undefined ? '' : `, not ${sub}`}`,
  );
}

/**
 * The `whpk_` public key of each FORWARD_SIGNING_KEY, one a line, in its order: what consumers
 * verify `v1a` signatures with (while rotating, each of them). Public: safe to print and share.
 */
function printPublicKeys(config: Config, output: Output): number {
  if (config.forwardSigningKeys.length === 0) {
    throw new OperationalError(
      'FORWARD_SIGNING_KEY is not set: there is no public key (docs/forwarding.md shows how to make a key pair)',
    );
  }
  output.out(`${config.forwardSigningKeys.map(publicKeyOf).join('\n')}\n`);
  return 0;
}
