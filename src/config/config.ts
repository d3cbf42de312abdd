import { isLoopback, weakSecrets } from './receiver-settings.js';
import { destinationSources } from './resolve-destinations.js';
import { SENDER_RETRY_WINDOW_SECONDS, SETTINGS, type SettingSpec } from './settings.js';
import type { ParsedSettings } from './setting-spec.js';

export { SENDER_RETRY_WINDOW_SECONDS, SETTINGS, type Reader } from './settings.js';
export type { ParsedSettings } from './setting-spec.js';

/** Every setting of the service, typed as parsed; the fields follow from SETTINGS. */
export type Config = ParsedSettings<typeof SETTINGS>;
export type Role = Config['role'];

export class ConfigError extends Error {
  override name = 'ConfigError';
  constructor(readonly problems: readonly string[]) {
    // One form, each problem starting with its variable: one problem is one line (what a
    // start-up refusal prints), several are a line each under the same words.
    super(
      problems.length === 1
        ? `invalid configuration: ${problems[0] ?? ''}`
        : `invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`,
    );
  }
}

/** `DOWNLOAD_MAX_BYTES` → `downloadMaxBytes`, unless the setting names its field. */
export function fieldOf(name: string, spec: SettingSpec): string {
  return (
    spec.key ??
    name.toLowerCase().replace(/_([a-z])/g, (_match, letter: string) => letter.toUpperCase())
  );
}

export interface LoadOptions {
  /** The CLI needs no signing secret unless it signs (`send` also takes --secret). */
  readonly forCli?: boolean;
}

/**
 * Parses `env` against a table of settings: every bad variable is reported in one ConfigError,
 * so an operator fixes them all in one go. An empty variable counts as unset. The sandbox's own
 * settings go through this too.
 */
export function parseSettings<Table extends Readonly<Record<string, SettingSpec>>>(
  table: Table,
  env: NodeJS.ProcessEnv,
  { forCli = false }: LoadOptions = {},
): ParsedSettings<Table> {
  const problems: string[] = [];
  const parsed: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(table)) {
    const given = env[name] === '' ? undefined : env[name];
    const raw = given ?? spec.default;
    if (raw === undefined && spec.required === true) {
      if (forCli) parsed[fieldOf(name, spec)] = Object.freeze([]);
      else problems.push(`${name} is required`);
      continue;
    }
    const result = spec.schema.safeParse(raw);
    if (result.success) parsed[fieldOf(name, spec)] = deepFreeze(result.data);
    else problems.push(...result.error.issues.map((issue) => `${name} ${issue.message}`));
  }
  if (problems.length > 0) throw new ConfigError(problems);
  // Each field was parsed by its own schema above; the mapped type says so field by field.
  return Object.freeze(parsed) as ParsedSettings<Table>;
}

/** Reads the environment into the service's frozen Config. */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  options: LoadOptions = {},
): Config {
  const config = parseSettings(SETTINGS, env, options);
  const problems = crossProblems(config, options);
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

/** Settings that are each fine alone but not together. */
function crossProblems(config: Config, { forCli = false }: LoadOptions): string[] {
  const problems: string[] = [];
  // Where others can reach the listener, a secret they can read or guess lets them sign
  // deliveries. The CLI listens nowhere.
  const weak = forCli || isLoopback(config.host) ? undefined : weakSecrets(config.webhookSecrets);
  if (weak !== undefined) {
    problems.push(
      `WEBHOOK_SECRETS ${weak}: refused because HOST ${config.host} is not loopback, so anyone who reaches it could sign deliveries; set the signing secret from the provider's dashboard, or HOST=127.0.0.1`,
    );
  }
  const dedupeFloor = SENDER_RETRY_WINDOW_SECONDS + config.signatureToleranceSeconds;
  if (config.dedupeTtlSeconds <= dedupeFloor) {
    problems.push(
      `DEDUPE_TTL_SECONDS (${config.dedupeTtlSeconds}) must exceed the sender's retry window (${SENDER_RETRY_WINDOW_SECONDS} s) plus SIGNATURE_TOLERANCE_SECONDS (${config.signatureToleranceSeconds}), ${dedupeFloor} s: a retry is accepted that long after the first attempt, and must be found a duplicate`,
    );
  }
  // Two passwords leave the reader guessing which one is used: refuse, naming neither.
  if (config.redisPassword !== undefined && new URL(config.redisUrl).password !== '') {
    problems.push(
      'REDIS_PASSWORD is set and REDIS_URL holds a password too: keep one (REDIS_PASSWORD in a Secret, REDIS_URL without its password)',
    );
  }
  const cluster = config.redisClusterNodes.length > 0;
  if (cluster && config.redisSentinels.length > 0) {
    problems.push('REDIS_SENTINELS and REDIS_CLUSTER_NODES exclude each other: set one');
  }
  if (cluster && !/\{[^{}]+\}/.test(config.queuePrefix)) {
    problems.push(
      `QUEUE_PREFIX must hold a {hash tag} such as {${config.queuePrefix}} with REDIS_CLUSTER_NODES: BullMQ keeps a queue's keys in one slot`,
    );
  }
  if (config.internalPort !== undefined && config.internalPort === config.port) {
    problems.push(
      `INTERNAL_PORT (${config.internalPort}) must differ from PORT: it keeps /metrics and the dashboard off the public port`,
    );
  }
  if (config.audioStore === 's3' && config.s3Bucket === undefined) {
    problems.push('S3_BUCKET is required with AUDIO_STORE=s3');
  }
  if (config.workerStallMs <= config.downloadTimeoutMs) {
    problems.push(
      `WORKER_STALL_MS (${config.workerStallMs}) must exceed DOWNLOAD_TIMEOUT_MS (${config.downloadTimeoutMs}): a slow download is not a wedged worker`,
    );
  }
  const sources = destinationSources(config);
  const http = sources.find((source) => source.destination.kind === 'http');
  if (http !== undefined && config.forwardSecret === undefined) {
    problems.push(
      `${http.variable} names an HTTP destination (${http.destination.name}) but FORWARD_SECRET is not set: HTTP forwards are signed with it`,
    );
  }
  // A name is what jobs, metrics and `forward pause` address a destination by: one each.
  const named = (name: string) => sources.find((source) => source.destination.name === name);
  const twice = sources.find((source) => named(source.destination.name) !== source);
  if (twice !== undefined) {
    problems.push(
      `${named(twice.destination.name)?.from ?? ''} and ${twice.from} are both named ${twice.destination.name}: give one another "name" in FORWARD_CONFIG`,
    );
  }
  return problems;
}

function deepFreeze<T>(value: T): T {
  return Array.isArray(value) ? (Object.freeze(value) as T) : value;
}
