import type { StoreContents } from './archive-lines.js';
import { cli } from './forward-status.js';
import type { TimedAttempt } from './latency.js';
import type { Observations, SentDelivery } from './observations.js';
import type { System } from './system.js';
import type { TrafficLog } from './traffic.js';

/**
 * The observations after the drain: the sandbox's deliveries and their attempts, the store and
 * its archive (read from the files or the bucket), what each destination received, and what
 * the operator CLI lists (recorded failures and revoked keys; failed jobs, for the report).
 */
export interface Collected {
  readonly observations: Observations;
  readonly attempts: TimedAttempt[];
  readonly contents: StoreContents;
  /** `failed --json` and the forwards of `failures --json`: why jobs failed for good. */
  readonly failedJobs: readonly unknown[];
  readonly problems: readonly string[];
}

/** What each refusal means, in docs/http-answers.md's words: the receiver's reason, by its status. */
const REASONS: Readonly<Record<number, string>> = {
  400: 'invalid delivery',
  401: 'signature not verified',
  413: 'body over MAX_BODY_BYTES',
  415: 'not application/json',
  503: 'Redis unavailable (not acknowledged)',
};

interface SandboxDelivery {
  id: string;
  event: string;
  data_id: string;
  state: string;
  attempts: { at: number; ms: number; status?: number; error?: string }[];
}

export async function collect(system: System, traffic: TrafficLog): Promise<Collected> {
  const problems: string[] = [];
  const deliveries = (await system.sandbox.call('GET', '/sandbox/deliveries'))
    .body as SandboxDelivery[];
  const sent: SentDelivery[] = deliveries.map((d) => {
    const last = d.attempts[d.attempts.length - 1];
    const lastAnswer =
      last === undefined
        ? undefined
        : last.status !== undefined
          ? `${last.status}${REASONS[last.status] === undefined ? '' : ` ${REASONS[last.status] ?? ''}`}`
          : `no answer: ${last.error ?? 'unknown'}`;
    return {
      id: d.id,
      event: d.event,
      dataId: d.data_id,
      state: d.state,
      ...(lastAnswer === undefined ? {} : { lastAnswer }),
    };
  });
  const attempts: TimedAttempt[] = deliveries.flatMap((d) =>
    d.attempts.map((a) => ({
      at: a.at,
      ms: a.ms,
      ...(a.status === undefined ? {} : { status: a.status }),
    })),
  );
  const contents = await system.store.read();
  await system.rabbit.takeRest().catch((error: unknown) => {
    problems.push(`the RabbitMQ queue could not be emptied: ${String(error)}`);
  });
  const nats = await system.nats.read().catch((error: unknown) => {
    problems.push(`the stream could not be read: ${String(error)}`);
    return [];
  });
  const listed = async (args: string[]): Promise<Record<string, unknown>[] | undefined> => {
    try {
      return JSON.parse(await cli(system.env, args)) as Record<string, unknown>[];
    } catch (error: unknown) {
      problems.push(`audio-webhooks ${args.join(' ')}: ${String(error)}`);
      return undefined;
    }
  };
  const failures = await listed(['failures', '--json']);
  const revoked = await listed(['revoked-keys', '--json']);
  const failed = await listed(['failed', '--json']);
  return {
    observations: {
      requested: traffic.requested,
      sent,
      expected: [...traffic.expected.values()],
      store: contents.store,
      archive: contents.archive,
      destinations: {
        http: system.http.received,
        nats,
        amqp: system.rabbit.received,
      },
      // Judged only when the CLI could list both: a CLI that failed is a problem, not a loss.
      ...(failures === undefined || revoked === undefined
        ? {}
        : {
            records: {
              failures: failures.filter((r) => r.kind === 'audio.failed').map(shownId),
              revocations: revoked.map(shownId),
            },
          }),
    },
    attempts,
    contents,
    failedJobs: [...(failed ?? []), ...(failures ?? []).filter((r) => r.kind === 'forward')],
    problems,
  };
}

/** A record's id as the checker matches it: a cut one ends in `…` (checker.ts, shownAs). */
function shownId(row: Record<string, unknown>): string {
  const id = String(row.id);
  return row.id_truncated === true ? `${id}…` : id;
}
