import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { describeError } from '../../util/describe-error.js';
import { parseDestination, type Destination } from './destinations.js';
import { compileFilter } from './message-filter.js';

/** FORWARD_CONFIG's `name`: shown in logs, `/metrics` and the CLI, so nothing that needs quoting. */
const NAME = /^[A-Za-z0-9._-]{1,100}$/;

const wholeNumber = (min: number, max: number) => {
  const message = `must be a whole number from ${min} to ${max}`;
  return z.int(message).min(min, message).max(max, message).optional();
};

/** One entry of `destinations`; the bounds are FORWARD_ATTEMPTS' and FORWARD_TIMEOUT_MS'. */
const DESTINATION = z.strictObject(
  {
    url: z.string({
      error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string'),
    }),
    name: z
      .string('must be a string')
      .regex(NAME, 'must be 1 to 100 letters, digits, ".", "_" or "-"')
      .optional(),
    // Checked by compileFilter, which names the path inside the filter.
    filter: z.unknown().optional(),
    attempts: wholeNumber(1, 100),
    timeout_ms: wholeNumber(100, 600_000),
    // Fractional is fine (0.5: one every two seconds); 0 would hold every message for ever.
    rate_per_second: z.number('must be a number').gt(0, 'must be > 0').optional(),
  },
  'must be an object such as {"url": "https://…"}',
);

const FILE = z.strictObject(
  { destinations: z.array(z.unknown(), 'must be a list of destinations') },
  'must hold an object such as {"destinations": […]}',
);

/** A zod issue as the tail of one line: `rate_per_second must be > 0`. */
function describeIssue(issue: z.core.$ZodIssue | undefined, keys: readonly string[]): string {
  if (issue === undefined) return 'is not valid';
  if (issue.code === 'unrecognized_keys')
    return `unknown key ${issue.keys.join(', ')} (known: ${keys.join(', ')})`;
  const field = issue.path.join('.');
  return field === '' ? issue.message : `${field} ${issue.message}`;
}

/** The entry's `name` when it is a valid one: the label of its problems (never its URL). */
function nameOf(entry: unknown): string | undefined {
  const name = (entry as { name?: unknown } | null)?.name;
  return typeof name === 'string' && NAME.test(name) ? name : undefined;
}

function configDestination(
  entry: unknown,
  position: number,
): { destination: Destination } | { problem: string } {
  const label = `destination ${position}`;
  const name = nameOf(entry);
  const where = name === undefined ? label : `${label} (${name})`;
  const given = DESTINATION.safeParse(entry);
  if (!given.success)
    return {
      problem: `${where}: ${describeIssue(given.error.issues[0], Object.keys(DESTINATION.shape))}`,
    };
  const { url, filter, attempts, timeout_ms, rate_per_second } = given.data;
  const parsed = parseDestination(url, label, name);
  if ('problem' in parsed) return parsed;
  const compiled = filter === undefined ? undefined : compileFilter(filter);
  if (compiled !== undefined && 'problem' in compiled)
    return { problem: `${where}: ${compiled.problem}` };
  return {
    destination: {
      ...parsed.destination,
      ...(compiled === undefined ? {} : { filter: compiled }),
      ...(attempts === undefined ? {} : { attempts }),
      ...(timeout_ms === undefined ? {} : { timeoutMs: timeout_ms }),
      ...(rate_per_second === undefined ? {} : { ratePerSecond: rate_per_second }),
    },
  };
}

/**
 * Reads FORWARD_CONFIG's file (docs/forwarding.md): `{"destinations": [{url, name, filter,
 * attempts, timeout_ms, rate_per_second}]}`. The first problem is returned as one line naming
 * the destination by position and `name`, never by URL: the URL may hold a secret, and so may
 * the file's text, which is why a JSON error is not quoted.
 */
export function readForwardConfig(
  path: string,
): { destinations: Destination[] } | { problem: string } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error: unknown) {
    return { problem: `cannot be read: ${describeError(error)}` };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { problem: `${path} is not valid JSON` };
  }
  const file = FILE.safeParse(json);
  if (!file.success)
    return { problem: describeIssue(file.error.issues[0], Object.keys(FILE.shape)) };
  const destinations: Destination[] = [];
  for (const [index, entry] of file.data.destinations.entries()) {
    const parsed = configDestination(entry, index + 1);
    if ('problem' in parsed) return parsed;
    destinations.push(parsed.destination);
  }
  return { destinations };
}
