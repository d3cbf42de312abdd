import { ownValue } from '../util/own-value.js';
import type { Logger } from 'pino';
import { jsonMember } from '../provider-spec/json-member.js';
import type {
  DeliveryTimeline,
  ForwardCode,
  Step,
  StepSubject,
} from '../history/delivery-timeline.js';
import type { Outcome } from './attempt-destination.js';
import type { Settled } from './settle-attempts.js';

/** A destination not tried this time, and how it stands. */
export interface Untried {
  readonly name: string;
  /** `filtered`: its filter did not want the message; `pending`: left to the forward job. */
  readonly code: Extract<ForwardCode, 'x' | 'p'>;
}

/**
 * Each destination's part in a delivery's timeline (history/delivery-timeline.ts), after an
 * attempt at some of them: sent (`forwarded`), failed and due again or given up
 * (`forward_failed`, stored as `<attempts> <why>`, `x<attempts> <why>` once given up), held for a paused destination (`forward_held`, its first time).
 * Not waited for, and never a reason to fail or repeat a forward: a step Redis refuses is logged.
 */
export function noteForwards(
  timeline: DeliveryTimeline | undefined,
  logger: Logger,
  subject: StepSubject,
  tried: readonly string[],
  outcomes: readonly Outcome[],
  settled: Pick<Settled, 'givenUp' | 'progress'>,
  untried: readonly Untried[] = [],
  /** Those held already before this attempt (the job's `heldSince`): not noted again. */
  heldBefore: Readonly<Record<string, number>> = {},
): void {
  if (timeline === undefined) return;
  const note = (step: Step) => {
    timeline.write(subject, step).catch((error: unknown) => {
      logger.debug({ err: error }, 'a forward step was not recorded');
    });
  };
  for (const { name, code } of untried) {
    note({ destination: { name, code, attempts: 0 } });
  }
  tried.forEach((name, index) => {
    const outcome = outcomes[index];
    const failures = settled.progress.tries.get(name) ?? 0;
    const gaveUp = ownValue(settled.givenUp, name);
    if (gaveUp !== undefined) {
      note({
        code: 'Y',
        detail: `x${Math.max(1, failures)} ${gaveUp}`,
        destination: { name, code: 'f', attempts: Math.max(1, failures) },
      });
      return;
    }
    switch (outcome?.kind) {
      case 'sent':
        note({ code: 'W', destination: { name, code: 's', attempts: failures + 1 } });
        return;
      case 'failed':
        note({
          code: 'Y',
          detail: `${failures} ${outcome.error.message}`,
          destination: { name, code: 'p', attempts: failures },
        });
        return;
      case 'held':
        note({
          ...(ownValue(heldBefore, name) !== undefined ? {} : { code: 'U' as const }),
          destination: { name, code: 'h', attempts: failures },
        });
        return;
      default:
        note({ destination: { name, code: 'p', attempts: failures } });
    }
  });
}

/** The delivery a forward job's message is about: its `type` and `id`. */
export function messageSubject(body: string): StepSubject | undefined {
  try {
    const type = jsonMember(body, 'type');
    const id = jsonMember(body, 'id');
    if (type === undefined || id === undefined) return undefined;
    return {
      event: JSON.parse(type) as string,
      id: JSON.parse(id) as string,
      receivedAt: Date.now(),
    };
  } catch {
    return undefined; // not a message of ours (a job added by hand): no timeline to write
  }
}
