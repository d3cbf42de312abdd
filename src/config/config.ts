import { MIN_ADMIN_PASSWORD_CHARS } from './operations-settings.js';
import { isLoopback, MIN_TOLERANCE_SECONDS, weakSecrets } from './receiver-settings.js';
import { SENDER_RETRY_WINDOW_SECONDS, type SharedSettings, type SettingSpec } from './settings.js';
import type { ParsedSettings } from './setting-spec.js';
import { nearMiss } from './variable-names.js';

export { SENDER_RETRY_WINDOW_SECONDS, type Reader } from './settings.js';
export type { ParsedSettings } from './setting-spec.js';

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
  options: LoadOptions = {},
): ParsedSettings<Table> {
  const { parsed, problems } = parseEach(table, env, options);
  if (problems.length > 0) throw new ConfigError(problems);
  // Each field was parsed by its own schema; the mapped type says so field by field.
  return parsed as ParsedSettings<Table>;
}

/**
 * Each setting of `table` parsed alone: the fields that parsed, and a problem for each that did
 * not. A required or invalid variable with a slip of its name set beside it (`WEBHOOK_SECRET`
 * for `WEBHOOK_SECRETS`) names that too.
 */
export function parseEach(
  table: Readonly<Record<string, SettingSpec>>,
  env: NodeJS.ProcessEnv,
  { forCli = false }: LoadOptions,
): { parsed: Readonly<Record<string, unknown>>; problems: string[] } {
  const problems: string[] = [];
  const parsed: Record<string, unknown> = {};
  const known = new Set(Object.keys(table));
  const withSlip = (name: string, problem: string) => {
    const slip = nearMiss(name, env, known);
    return slip === undefined ? problem : `${problem} (${slip} is set: did you mean ${name}?)`;
  };
  for (const [name, spec] of Object.entries(table)) {
    const given = env[name] === '' ? undefined : env[name];
    const raw = given ?? spec.default;
    if (raw === undefined && spec.required === true) {
      if (forCli) parsed[fieldOf(name, spec)] = Object.freeze([]);
      else problems.push(withSlip(name, `${name} is required`));
      continue;
    }
    const result = spec.schema.safeParse(raw);
    if (result.success) parsed[fieldOf(name, spec)] = deepFreeze(result.data);
    else
      problems.push(
        ...result.error.issues.map((issue) => withSlip(name, `${name} ${issue.message}`)),
      );
  }
  return { parsed: Object.freeze(parsed), problems };
}

/**
 * Settings that are each fine alone but not together. A field that did not parse is absent from
 * `parsed`; each check runs when the fields it reads are there, or (DEDUPE_TTL_SECONDS against
 * any tolerance) when it can tell without them.
 */
export function sharedProblems(
  parsed: Partial<SharedSettings>,
  { forCli = false }: LoadOptions,
): string[] {
  const problems: string[] = [];
  const read = (...fields: (keyof SharedSettings)[]) => fields.every((field) => field in parsed);
  // Only after read() has said that the fields a check uses are there.
  const config = parsed as SharedSettings;
  // Where others can reach the listener, a secret they can read or guess lets them sign
  // deliveries. The CLI listens nowhere.
  const open = !forCli && read('host') && !isLoopback(config.host);
  const weak = open && read('webhookSecrets') ? weakSecrets(config.webhookSecrets) : undefined;
  if (weak !== undefined) {
    problems.push(
      `WEBHOOK_SECRETS ${weak}: refused because HOST ${config.host} is not loopback, so anyone who reaches it could sign deliveries; set the signing secret from the provider's dashboard, or HOST=127.0.0.1`,
    );
  }
  const serving = !forCli && config.role !== 'worker';
  problems.push(...dashboardProblems(config, read, { serving, open }));
  // A tolerance that did not parse is at least its minimum: a TTL at or under the floor that
  // minimum gives is too short whatever the tolerance is meant to be.
  const tolerance = read('signatureToleranceSeconds')
    ? config.signatureToleranceSeconds
    : MIN_TOLERANCE_SECONDS;
  const dedupeFloor = SENDER_RETRY_WINDOW_SECONDS + tolerance;
  if (read('dedupeTtlSeconds') && config.dedupeTtlSeconds <= dedupeFloor) {
    const named = read('signatureToleranceSeconds') ? String(tolerance) : `at least ${tolerance}`;
    problems.push(
      `DEDUPE_TTL_SECONDS (${config.dedupeTtlSeconds}) must exceed the sender's retry window (${SENDER_RETRY_WINDOW_SECONDS} s) plus SIGNATURE_TOLERANCE_SECONDS (${named}), ${dedupeFloor} s: a retry is accepted that long after the first attempt, and must be found a duplicate`,
    );
  }
  // Two passwords leave the reader guessing which one is used: refuse, naming neither.
  if (
    read('redisPassword', 'redisUrl') &&
    config.redisPassword !== undefined &&
    new URL(config.redisUrl).password !== ''
  ) {
    problems.push(
      'REDIS_PASSWORD is set and REDIS_URL holds a password too: keep one (REDIS_PASSWORD in a Secret, REDIS_URL without its password)',
    );
  }
  const cluster = read('redisClusterNodes') && config.redisClusterNodes.length > 0;
  if (cluster && read('redisSentinels') && config.redisSentinels.length > 0) {
    problems.push('REDIS_SENTINELS and REDIS_CLUSTER_NODES exclude each other: set one');
  }
  if (cluster && read('queuePrefix') && !/\{[^{}]+\}/.test(config.queuePrefix)) {
    problems.push(
      `QUEUE_PREFIX must hold a {hash tag} such as {${config.queuePrefix}} with REDIS_CLUSTER_NODES: BullMQ keeps a queue's keys in one slot`,
    );
  }
  if (
    read('internalPort', 'port') &&
    config.internalPort !== undefined &&
    config.internalPort === config.port
  ) {
    problems.push(
      `INTERNAL_PORT (${config.internalPort}) must differ from PORT: it keeps /metrics and the dashboard off the public port`,
    );
  }
  if (
    read('audioStore', 's3Bucket') &&
    config.audioStore === 's3' &&
    config.s3Bucket === undefined
  ) {
    problems.push('S3_BUCKET is required with AUDIO_STORE=s3');
  }
  if (
    read('workerStallMs', 'downloadTimeoutMs') &&
    config.workerStallMs <= config.downloadTimeoutMs
  ) {
    problems.push(
      `WORKER_STALL_MS (${config.workerStallMs}) must exceed DOWNLOAD_TIMEOUT_MS (${config.downloadTimeoutMs}): a slow download is not a wedged worker`,
    );
  }
  return problems;
}

/**
 * What ADMIN_PASSWORD needs where this process serves the dashboard (`serving`): a long one
 * where HOST lets others reach it (`open`), and INTERNAL_PORT behind a proxy.
 */
function dashboardProblems(
  config: SharedSettings,
  read: (...fields: (keyof SharedSettings)[]) => boolean,
  { serving, open }: { serving: boolean; open: boolean },
): string[] {
  if (!serving || !read('adminPassword') || config.adminPassword === undefined) return [];
  const problems: string[] = [];
  if (open && config.adminPassword.length < MIN_ADMIN_PASSWORD_CHARS) {
    problems.push(
      `ADMIN_PASSWORD is shorter than ${MIN_ADMIN_PASSWORD_CHARS} characters: refused because HOST ${config.host} is not loopback, so anyone who reaches it could guess it; set a long random one (openssl rand -base64 24), or HOST=127.0.0.1`,
    );
  }
  // Behind a proxy PORT believes X-Forwarded-For, so each made-up address would be a new guessing
  // budget; INTERNAL_PORT trusts no forwarded header. Any setting but the default asks for it, so
  // that the rule an operator reads has no exception to remember.
  const proxied = read('trustProxy') && config.trustProxy !== 'loopback';
  if (proxied && read('internalPort') && config.internalPort === undefined) {
    problems.push(
      `INTERNAL_PORT is required with ADMIN_PASSWORD and TRUST_PROXY=${String(config.trustProxy)}: the dashboard is then served only there, where no forwarded address is believed, so a made-up X-Forwarded-For cannot reset the guessing limit`,
    );
  }
  return problems;
}

function deepFreeze<T>(value: T): T {
  return Array.isArray(value) ? (Object.freeze(value) as T) : value;
}
