import type { Destination } from './destinations.js';
import type { ForwardSettings } from './forward-settings.js';

/** What the destinations are resolved from: both lists, and the service-wide attempts and timeout. */
export type DestinationSettings = Pick<
  ForwardSettings,
  'forwardDestinations' | 'forwardConfigDestinations' | 'forwardAttempts' | 'forwardTimeoutMs'
>;

/** A destination with its attempts and timeout settled: its own, else the service-wide ones. */
export type ResolvedDestination = Destination & {
  readonly attempts: number;
  readonly timeoutMs: number;
};

/** A destination and where it was set, for a problem that must say which to fix. */
export interface DestinationSource {
  readonly destination: Destination;
  /** `FORWARD_URLS` or `FORWARD_CONFIG`. */
  readonly variable: string;
  /** `FORWARD_URLS entry 1`, `FORWARD_CONFIG destination 2`. */
  readonly from: string;
}

/** Every destination, FORWARD_URLS' in their order first, then FORWARD_CONFIG's. */
export function destinationSources(
  config: Pick<ForwardSettings, 'forwardDestinations' | 'forwardConfigDestinations'>,
): readonly DestinationSource[] {
  return [
    ...config.forwardDestinations.map((destination, at) => ({
      destination,
      variable: 'FORWARD_URLS',
      from: `FORWARD_URLS entry ${at + 1}`,
    })),
    ...config.forwardConfigDestinations.map((destination, at) => ({
      destination,
      variable: 'FORWARD_CONFIG',
      from: `FORWARD_CONFIG destination ${at + 1}`,
    })),
  ];
}

/**
 * The destinations the forwarder sends to: both lists, with FORWARD_ATTEMPTS and
 * FORWARD_TIMEOUT_MS where FORWARD_CONFIG set no `attempts` or `timeout_ms` (FORWARD_URLS sets
 * neither), so a sender never looks further than its destination.
 */
export function resolveDestinations(config: DestinationSettings): readonly ResolvedDestination[] {
  return destinationSources(config).map(({ destination }) => ({
    ...destination,
    attempts: destination.attempts ?? config.forwardAttempts,
    timeoutMs: destination.timeoutMs ?? config.forwardTimeoutMs,
  }));
}

/**
 * FORWARD_URLS and FORWARD_CONFIG together, each fine alone: an HTTP destination needs a signing
 * key, and each destination needs a name of its own.
 */
export function destinationProblems(
  config: Pick<
    ForwardSettings,
    'forwardDestinations' | 'forwardConfigDestinations' | 'forwardSecret' | 'forwardSigningKeys'
  >,
): string[] {
  const problems: string[] = [];
  const sources = destinationSources(config);
  const http = sources.find((source) => source.destination.kind === 'http');
  if (
    http !== undefined &&
    config.forwardSecret === undefined &&
    config.forwardSigningKeys.length === 0
  ) {
    problems.push(
      `${http.variable} names an HTTP destination (${http.destination.name}) but neither FORWARD_SECRET nor FORWARD_SIGNING_KEY is set: HTTP forwards are signed with one or both`,
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
