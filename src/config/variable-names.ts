/**
 * Misspelt and unknown variables. An operator who writes `WEBHOOK_SECRET` for `WEBHOOK_SECRETS`
 * or `REDIS_URLS` for `REDIS_URL` otherwise meets a bare "is required", or a setting silently
 * left at its default. Everything here follows from the declared names: a setting added to
 * any table is known, and its first word a prefix, with nothing else to change.
 */

/**
 * Prefixes other programs read variables under, which a setting here happens to share: the
 * OpenTelemetry SDK reads its own OTEL_* variables beside OTEL_EXPORTER_OTLP_ENDPOINT.
 */
const FOREIGN_PREFIXES: ReadonlySet<string> = new Set(['OTEL_']);

/** `REDIS_URL` → `REDIS_`; a name of one word (`PORT`) gives no prefix. */
function prefixOf(name: string): string | undefined {
  const underscore = name.indexOf('_');
  return underscore <= 0 ? undefined : name.slice(0, underscore + 1);
}

/** The prefixes the declared names start with (`WEBHOOK_`, `REDIS_`, `ADMIN_`, `S3_`, …). */
export function knownPrefixes(known: Iterable<string>): Set<string> {
  const prefixes = new Set<string>();
  for (const name of known) {
    const prefix = prefixOf(name);
    if (prefix !== undefined && !FOREIGN_PREFIXES.has(prefix)) prefixes.add(prefix);
  }
  return prefixes;
}

/** Levenshtein distance (insert, delete, replace one character). */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const replace = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min(replace, (previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/**
 * True when `typed` reads as a slip for `name`: the same letters in another case, or one or two
 * characters apart (one, for a name under 8 characters: `HOST` and `HOME` are not a slip).
 */
function isSlipFor(typed: string, name: string): boolean {
  const a = typed.toUpperCase();
  if (a === name) return typed !== name;
  return distance(a, name) <= (name.length < 8 ? 1 : 2);
}

/**
 * A variable set in `env`, none of the `known` names, that reads as a slip for `name`
 * (`WEBHOOK_SECRET` for `WEBHOOK_SECRETS`); undefined when there is none.
 */
export function nearMiss(
  name: string,
  env: NodeJS.ProcessEnv,
  known: ReadonlySet<string>,
): string | undefined {
  return Object.keys(env)
    .filter((typed) => env[typed] !== undefined && env[typed] !== '' && !known.has(typed))
    .find((typed) => isSlipFor(typed, name));
}

export interface UnknownVariable {
  readonly name: string;
  /** The declared setting it reads as a slip for, when one does. */
  readonly meant?: string;
}

/**
 * Variables set in `env` that start like a declared one (a prefix of `known`, in any case) but
 * are none of them: each is ignored, and the operator should hear so.
 */
export function unknownVariables(
  env: NodeJS.ProcessEnv,
  known: ReadonlySet<string>,
): UnknownVariable[] {
  const prefixes = knownPrefixes(known);
  return Object.keys(env)
    .filter((name) => !known.has(name) && env[name] !== undefined)
    .filter((name) => prefixes.has(prefixOf(name.toUpperCase()) ?? ''))
    .sort()
    .map((name) => {
      const meant = [...known].find((setting) => isSlipFor(name, setting));
      return meant === undefined ? { name } : { name, meant };
    });
}

/** One warning line for an unknown variable. */
export function unknownVariableWarning({ name, meant }: UnknownVariable): string {
  return meant === undefined
    ? `${name} is not a setting of this service and is ignored`
    : `${name} is not a setting of this service and is ignored: did you mean ${meant}?`;
}
