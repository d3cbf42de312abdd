import type { Logger } from 'pino';
import {
  ConfigError,
  parseEach,
  sharedProblems,
  type LoadOptions,
  type ParsedSettings,
} from './config/config.js';
import { SHARED_SETTINGS, TRACING_SETTINGS, type SettingSpec } from './config/settings.js';
import { FORWARD_SETTINGS } from './forwarding/settings/forward-settings.js';
import { destinationProblems } from './forwarding/settings/resolve-destinations.js';
import type { AudioStore } from './storage/audio-store.js';

export {
  ConfigError,
  parseSettings,
  SENDER_RETRY_WINDOW_SECONDS,
  type LoadOptions,
  type ParsedSettings,
  type Reader,
} from './config/config.js';

/**
 * EVERY SETTING, DECLARED ONCE: the settings every role reads (config/) and forwarding's own
 * (forwarding/settings/), in one table. The Config type follows from it; a test checks that
 * .env.example and docs/configuration.md's table name the same variables, in this order, with
 * the same defaults and readers. A name must appear in one area only: a spread that repeats it
 * would silently replace the first.
 */
export const SETTINGS = {
  ...SHARED_SETTINGS,
  ...FORWARD_SETTINGS,
  ...TRACING_SETTINGS,
} as const satisfies Record<string, SettingSpec>;

/** Every setting of the service, typed as parsed; the fields follow from SETTINGS. */
export type Config = ParsedSettings<typeof SETTINGS>;
export type Role = Config['role'];

/**
 * src/custom/store.ts's `createStore`. It is given the whole Config: upstream cannot know which
 * settings a fork's store reads.
 */
export type CreateStore = (config: Config, logger: Logger) => Promise<AudioStore>;

/**
 * Reads the environment into the service's frozen Config. One refusal names every bad variable:
 * those that do not parse, and those that parse but do not fit together, each cross-check run
 * as far as the values it reads could be read.
 */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  options: LoadOptions = {},
): Config {
  const { parsed, problems } = parseEach(SETTINGS, env, options);
  problems.push(...sharedProblems(parsed, options));
  const forwarding = [
    'forwardDestinations',
    'forwardConfigDestinations',
    'forwardSecret',
    'forwardSigningKeys',
  ];
  if (forwarding.every((field) => field in parsed))
    problems.push(...destinationProblems(parsed as Config));
  if (problems.length > 0) throw new ConfigError(problems);
  return parsed as Config;
}
