import { parseArgs } from 'node:util';
import type { RedisConnection } from '../redis/connections.js';
import { ConfigError, loadConfig, type Config } from '../settings.js';
import { createDeliveryQueues } from '../queue/delivery-queue.js';
import { queueUnion } from '../jobs/queue-union.js';
import { RedisUnreachableError } from '../redis/connections.js';
import { MissingSettingError, OperationalError, UsageError } from './cli-errors.js';
import { safeOutput, type Output } from './print.js';
import {
  listFailed,
  listFailures,
  listRevokedKeys,
  printQueueKeys,
  retryFailed,
} from './queue-commands.js';
import { createForwardQueue } from '../forwarding/forward-queue.js';
import { runTts, runVoices } from './provider-commands.js';
import { runSandbox, SANDBOX_FLAGS } from './sandbox-command.js';
import { send } from './send.js';
import { REPLAY_FLAGS, runReplay, type ReplayErrors } from './replay-command.js';
import { ReplayStalledError } from '../archive/replay.js';
import { DeadlineError } from '../util/deadline.js';
import { StorageError } from '../storage/storage-errors.js';
import { COMMANDS, commandUsage, USAGE } from './usage.js';
import { runForward } from './forward-command.js';
import { withRedis } from './with-redis.js';
import { ShardCountError } from '../queue/shard-count.js';
import { runInspect } from './inspect-command.js';

const OPTIONS = {
  json: { type: 'boolean' },
  all: { type: 'boolean' },
  url: { type: 'string' },
  secret: { type: 'string' },
  id: { type: 'string', multiple: true },
  data: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  host: { type: 'string' },
  port: { type: 'string' },
  'cdn-port': { type: 'string' },
  'public-host': { type: 'string' },
  'webhook-url': { type: 'string' },
  'time-scale': { type: 'string' },
  'rate-window-ms': { type: 'string' },
  'delivery-timeout-ms': { type: 'string' },
  dir: { type: 'string' },
  voice: { type: 'string' },
  out: { type: 'string' },
  file: { type: 'string' },
  'out-dir': { type: 'string' },
  since: { type: 'string' },
  until: { type: 'string' },
  event: { type: 'string' },
  'dry-run': { type: 'boolean' },
  yes: { type: 'boolean', short: 'y' },
} as const;

/** Which options each command takes; anything else is a usage error. */
const ACCEPTS: Readonly<Record<string, readonly string[]>> = {
  send: ['url', 'secret', 'id', 'data'],
  failed: ['json'],
  retry: ['all'],
  'revoked-keys': ['json'],
  failures: ['json'],
  sandbox: [...SANDBOX_FLAGS, 'secret'],
  tts: ['voice', 'out', 'file', 'out-dir'],
  voices: ['json'],
  replay: [...REPLAY_FLAGS],
  forward: ['json', 'since', 'until', 'event'],
  inspect: ['json', 'event'],
  queue: ['json'],
};

/**
 * Runs one command; returns the exit code. Standard output only carries the command's answer.
 * Both streams are written through print.ts's safeOutput, whatever the command.
 */
export async function runCli(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  rawOutput: Output,
  rawErrors: ReplayErrors,
): Promise<number> {
  const errors = safeOutput(rawErrors, false);
  let output = safeOutput(rawOutput, false);
  try {
    const { values, positionals } = parseArgs({
      args: [...argv],
      options: OPTIONS,
      allowPositionals: true,
      strict: true,
    });
    output = safeOutput(rawOutput, values.json === true);
    const [command, ...rest] = positionals;
    if (command === 'help' || (values.help === true && command === undefined)) {
      output.out(rest[0] === undefined ? USAGE : commandUsage(rest[0]));
      return 0;
    }
    if (values.help === true && command !== undefined && Object.hasOwn(COMMANDS, command)) {
      output.out(commandUsage(command));
      return 0;
    }
    const accepted =
      command === undefined || !Object.hasOwn(ACCEPTS, command) ? undefined : ACCEPTS[command];
    if (command === undefined || accepted === undefined)
      throw new UsageError(command ? `unknown command ${command}` : 'no command');
    const extra = Object.keys(values).filter((key) => !accepted.includes(key));
    if (extra.length > 0) throw new UsageError(`${command} does not take --${extra.join(', --')}`);

    if (command === 'sandbox') {
      if (rest.length > 0) throw new UsageError('sandbox takes no arguments');
      const { id: _id, ...flags } = values;
      return await runSandbox(flags, env, output, errors);
    }
    // The CLI reads the service's configuration; only `send` needs a secret, and takes --secret.
    const config = loadConfig(env, { forCli: true });
    if (command === 'send') {
      if (rest.length !== 1 || rest[0] === undefined)
        throw new UsageError('send takes exactly one event name');
      const secret = values.secret ?? config.webhookSecrets[0];
      if ((values.id?.length ?? 0) > 1) throw new UsageError('send takes one --id');
      return await send(
        { event: rest[0], url: values.url, secret, id: values.id?.[0], data: values.data },
        config,
        output,
        errors,
      );
    }
    if (command === 'tts' || command === 'voices') {
      if (rest.length > (command === 'tts' ? 1 : 0))
        throw new UsageError(`${command}: too many arguments`);
      return await withRedis(
        config,
        (redis) =>
          command === 'voices'
            ? runVoices(values.json === true, env, config, redis, output)
            : runTts(
                {
                  text: rest[0],
                  voice: values.voice,
                  out: values.out,
                  file: values.file,
                  outDir: values['out-dir'],
                },
                env,
                config,
                redis,
                output,
                errors,
              ),
        { queue: false },
      );
    }
    if (command === 'replay') {
      if (rest.length > 0) throw new UsageError('replay takes no arguments (ids go with --id)');
      return await runReplay(
        {
          ids: values.id ?? [],
          since: values.since,
          until: values.until,
          event: values.event,
          dryRun: values['dry-run'] === true,
          json: values.json === true,
          yes: values.yes === true,
        },
        config,
        (work) => withRedis(config, work),
        output,
        errors,
      );
    }
    if (command === 'forward') {
      const { json, since, until, event } = values;
      return await runForward(
        rest,
        { json: json === true, since, until, event },
        config,
        output,
        errors,
      );
    }
    if (command === 'queue') {
      if (rest.length !== 1 || rest[0] !== 'keys') throw new UsageError('queue takes keys');
      return printQueueKeys(config, values.json === true, output);
    }
    if (command === 'inspect') {
      if (rest.length !== 1 || rest[0] === undefined)
        throw new UsageError('inspect takes exactly one data.id');
      const id = rest[0];
      const flags = { event: values.event, json: values.json === true };
      return await withRedis(config, (redis) =>
        runInspect(id, flags, config, redis, output, errors),
      );
    }
    if (command === 'retry' && (rest.length === 1) === (values.all === true)) {
      throw new UsageError('retry takes a job id or --all');
    }
    if (command !== 'retry' && rest.length > 0)
      throw new UsageError(`${command} takes no arguments`);
    return await withRedis(config, (redis) =>
      runRedisCommand(command, rest[0], values.json === true, config, redis, output),
    );
  } catch (error: unknown) {
    if (error instanceof UsageError || isParseArgsError(error)) {
      // One line, and where the rest is: the whole help buried the line that mattered.
      const command = argv.find((arg) => Object.hasOwn(COMMANDS, arg) && arg !== 'help');
      const help = command === undefined ? 'help' : `help ${command}`;
      errors.out(`audio-webhooks: ${error.message} (see: audio-webhooks ${help})\n`);
      return 2;
    }
    if (error instanceof MissingSettingError) {
      errors.out(`audio-webhooks: ${error.message}\n`);
      return 2;
    }
    if (error instanceof ConfigError || error instanceof ShardCountError) {
      errors.out(`audio-webhooks: ${error.message}\n`);
      return 2;
    }
    if (
      error instanceof OperationalError ||
      error instanceof RedisUnreachableError ||
      error instanceof StorageError ||
      error instanceof ReplayStalledError ||
      error instanceof DeadlineError
    ) {
      errors.out(`audio-webhooks: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
}

/** node:util parseArgs rejects unknown options with ERR_PARSE_ARGS_* codes. */
function isParseArgsError(error: unknown): error is Error {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS');
}

async function runRedisCommand(
  command: string,
  jobId: string | undefined,
  json: boolean,
  config: Config,
  redis: RedisConnection,
  output: Output,
): Promise<number> {
  const prefix = config.queuePrefix;
  if (command === 'revoked-keys') return await listRevokedKeys(redis, prefix, json, output);
  // Every shard's queue, read as one.
  const shards = createDeliveryQueues({ connection: redis, prefix, shards: config.queueShards });
  const queue = queueUnion(shards);
  const forwards = createForwardQueue(redis, prefix);
  try {
    if (command === 'failures') return await listFailures(redis, prefix, forwards, json, output);
    return command === 'failed'
      ? await listFailed(queue, json, output)
      : await retryFailed([queue, forwards], jobId, output);
  } finally {
    await Promise.all([...shards.map((shard) => shard.close()), forwards.close()]);
  }
}
