import {
  FORWARD_STATES,
  STATES,
  STEP_NAMES,
  type ForwardCode,
  type StateCode,
  type StoredTimeline,
} from '../history/delivery-timeline.js';

/** A delivery's state, as the API names it. */
export type DeliveryState = (typeof STATES)[StateCode];
/** A destination's part in it, as the API names it. */
export type ForwardState = (typeof FORWARD_STATES)[ForwardCode];

/** One delivery in a list (docs/operations.md, "Every route of the inspector"). */
export interface DeliverySummary {
  readonly event: string;
  readonly id: string;
  readonly received_at: string;
  readonly state: DeliveryState;
  readonly attempts: number;
  readonly duplicates: number;
  readonly forwards: Readonly<Record<string, ForwardState>>;
}

export interface TimelineStep {
  readonly at: string;
  /** `unknown`: a step code of another version's. */
  readonly step: (typeof STEP_NAMES)[keyof typeof STEP_NAMES] | 'unknown';
  readonly detail: string;
}

export interface ForwardPart {
  readonly destination: string;
  readonly state: ForwardState;
  readonly attempts: number;
  readonly last_error: string | null;
}

/** A timeline read back: what the API shows of it, and the job it names. */
export interface ReadTimeline {
  readonly summary: DeliverySummary;
  readonly jobId: string | undefined;
  /** Its steps, oldest first: the API's `timeline`. */
  readonly steps: readonly TimelineStep[];
  readonly forwards: readonly ForwardPart[];
  /** What handling stored (the last `stored` step's), or null. */
  readonly stored: unknown;
  /** Its W3C trace id (the `received` step's), the one its forwards carry; null when not kept. */
  readonly traceId: string | null;
  /** Its position in the indexes: the cursor of the list after it. */
  readonly score: number;
  readonly member: string;
}

/**
 * A timeline (history/delivery-timeline.ts) as the inspector shows it: its positional
 * JSON read, its terse details put in words, its destinations' parts with their last errors.
 */

/** A stored code's name; a timeline written by another version may hold a code unknown here. */
function nameOf<T extends string>(
  names: Readonly<Record<string, T>>,
  code: string,
  otherwise: T,
): T {
  return Object.hasOwn(names, code) ? (names[code] ?? otherwise) : otherwise;
}

export function parseTimeline(raw: string | null, member: string): ReadTimeline | undefined {
  if (raw === null) return undefined;
  let record: StoredTimeline;
  try {
    record = JSON.parse(raw) as StoredTimeline;
  } catch {
    return undefined;
  }
  const [event, id, received, state, attempts, duplicates, storedForwards, flat] = record;
  if (typeof received !== 'number') return undefined;
  const pairs = (Array.isArray(storedForwards) ? storedForwards : []) as readonly (readonly [
    string,
    string,
  ])[];
  const names = pairs.map(([name]) => name);
  const steps: { at: number; code: string; detail: string }[] = [];
  const list = (Array.isArray(flat) ? flat : []) as readonly (number | string)[];
  for (let i = 0; i + 2 < list.length; i += 3) {
    steps.push({
      at: received + Number(list[i]),
      code: String(list[i + 1]),
      detail: String(list[i + 2]),
    });
  }
  const shown = steps.map((step) => ({
    at: new Date(step.at).toISOString(),
    step: nameOf<TimelineStep['step']>(STEP_NAMES, step.code, 'unknown'),
    detail: worded(step.code, step.detail, names),
  }));
  const lastError = (index: number) => {
    const failure = [...steps]
      .reverse()
      .find((s) => s.code === 'Y' && destinationOf(s.detail).index === index);
    return failure === undefined ? null : failureOf(destinationOf(failure.detail).rest).reason;
  };
  const forwards = pairs.map(([destination, value], index) => ({
    destination,
    state: nameOf(FORWARD_STATES, value[0] ?? 'p', 'pending'),
    attempts: Number(value.slice(1)) || 0,
    last_error: lastError(index),
  }));
  const stored = [...steps].reverse().find((step) => step.code === 'S');
  const replayed = [...steps].reverse().find((step) => step.code === 'P');
  const arrival = steps.find((step) => step.code === 'R');
  return {
    summary: {
      event,
      id,
      received_at: new Date(received).toISOString(),
      state: nameOf(STATES, state, 'queued'),
      attempts: attempts || 0,
      duplicates: duplicates || 0,
      forwards: Object.fromEntries(forwards.map((f) => [f.destination, f.state])),
    },
    jobId: replayed?.detail,
    steps: shown,
    forwards,
    stored: stored === undefined ? null : parseJson(stored.detail),
    traceId: traceIdOf(arrival?.detail),
    score: received,
    member,
  };
}

/**
 * The `received` step's detail is `<secret> <bytes> <trace id>`, the trace id in base64url
 * (receiver/enqueue-delivery.ts); a timeline from before trace ids were kept has none.
 */
function traceIdOf(detail: string | undefined): string | null {
  const traceId = detail?.split(' ')[2];
  return traceId !== undefined && /^[A-Za-z0-9_-]{22}$/.test(traceId)
    ? Buffer.from(traceId, 'base64url').toString('hex')
    : null;
}

/** A destination's step names it by its index in the timeline's forwards, before the rest. */
function destinationOf(detail: string): { index: number; rest: string } {
  const space = detail.indexOf(' ');
  const index = Number(space < 0 ? detail : detail.slice(0, space));
  return { index, rest: space < 0 ? '' : detail.slice(space + 1) };
}

/** A forward's failure as stored: `<attempts> <why>`, `x<attempts> <why>` once given up. */
function failureOf(rest: string): { attempts: number; givenUp: boolean; reason: string } {
  const space = rest.indexOf(' ');
  const head = space < 0 ? rest : rest.slice(0, space);
  const givenUp = head.startsWith('x');
  return {
    attempts: Number(givenUp ? head.slice(1) : head) || 0,
    givenUp,
    reason: space < 0 ? '' : rest.slice(space + 1),
  };
}

/** A step's detail as stored (terse: history/delivery-timeline.ts), in words. */
function worded(code: string, detail: string, destinations: readonly string[]): string {
  const named = () => {
    const { index, rest } = destinationOf(detail);
    return { name: destinations[index] ?? `destination #${index + 1}`, rest };
  };
  switch (code) {
    case 'R': {
      const [secret, bytes] = detail.split(' ');
      return `signed with WEBHOOK_SECRETS index ${secret ?? '?'}, ${bytes ?? '?'} bytes`;
    }
    case 'D':
      return 'sent again by the provider; answered 200 duplicate, not handled again';
    case 'A': {
      const space = detail.indexOf(' ');
      return `attempt ${detail.slice(0, space)} by worker ${detail.slice(space + 1)}`;
    }
    case 'S': {
      const item = parseJson(detail);
      if (item === null || typeof item !== 'object') return detail;
      const { key, bytes, content_type } = item as Record<string, unknown>;
      return `${String(key)}, ${String(bytes)} bytes, ${String(content_type)}`;
    }
    case 'T':
      return 'put back on the queue with fresh attempts';
    case 'P':
      return `queued again from the archive as job ${detail}`;
    case 'W':
      return `sent to ${named().name}`;
    case 'Y': {
      const { name, rest } = named();
      const { attempts, givenUp, reason } = failureOf(rest);
      return `${name}: ${reason} (attempt ${attempts}${givenUp ? ', given up' : ', will retry'})`;
    }
    case 'U':
      return `${named().name} is paused: the message waits for it`;
    default:
      return detail;
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
