import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SandboxProcess } from '../harness/sandbox-process.js';
import { cdnContent, sha256Hex } from './cdn-content.js';
import { wantsOf } from './destinations-config.js';
import type { FaultCdn } from './fault-cdn.js';
import type { ExpectedItem } from './observations.js';
import { padToBytes } from './padding.js';
import { CUSTOM_EVENT, type PlannedSend } from './traffic-plan.js';

/**
 * Sends the planned traffic through the sandbox's API at its offsets, and records what each
 * accepted request makes the sandbox send (how many deliveries: the checker's `requested`) and
 * what each item should leave behind (the checker's `expected`).
 */
export interface TrafficLog {
  requested: number;
  readonly expected: Map<string, ExpectedItem>;
  /** Requests the sandbox did not take (they make no delivery): never expected. */
  readonly refusedByTheSandbox: string[];
  /** Sends by kind, as made. */
  readonly sends: Record<string, number>;
}

/** The receiver's MAX_BODY_BYTES (the service's default: the soak does not change it). */
export const MAX_BODY_BYTES = 1_048_576;
/** Requests to the sandbox in flight at once. */
const IN_FLIGHT = 16;

export async function sendTraffic(
  plan: readonly PlannedSend[],
  deps: {
    readonly seed: number;
    readonly sandbox: SandboxProcess;
    readonly cdn: FaultCdn;
    readonly filterActive: boolean;
    readonly startedAt: number;
    readonly stopAt: number;
  },
): Promise<TrafficLog> {
  const log: TrafficLog = { requested: 0, expected: new Map(), refusedByTheSandbox: [], sends: {} };
  const { sandbox, cdn } = deps;
  const sentEvents = new Map<number, { event: string; data: Record<string, unknown> }>();
  /** Each send's request, by index: a re-delivery waits for the delivery it repeats. */
  const made = new Map<number, Promise<void>>();
  const expect = (item: Omit<ExpectedItem, 'wants'>, data: { voice?: unknown }) => {
    log.expected.set(JSON.stringify([item.event, item.id]), {
      ...item,
      wants: wantsOf(item.event, data, deps.filterActive),
    });
  };
  const event = async (
    index: number,
    body: { event: string; data: Record<string, unknown>; faults?: string[] },
  ) => {
    const answer = await sandbox.call('POST', '/sandbox/events', body);
    if (answer.status !== 202) throw new Error(`/sandbox/events answered ${answer.status}`);
    log.requested += 1;
    sentEvents.set(index, { event: body.event, data: body.data });
  };
  const one = async (send: PlannedSend, index: number) => {
    switch (send.kind) {
      case 'ready':
      case 'custom':
      case 'big': {
        cdn.add(send.file);
        const sha256 = sha256Hex(cdnContent(deps.seed, send.file.n, send.file.size));
        const audioUrl = `${cdn.origin}/a/${send.file.n}${send.file.ext}`;
        const name = send.kind === 'custom' ? CUSTOM_EVENT : 'audio.ready';
        let data: Record<string, unknown> =
          send.kind === 'custom'
            ? { id: send.id, audio_url: audioUrl, voice: send.voice }
            : {
                id: send.id,
                kind: 'tts',
                audio_url: audioUrl,
                voice: send.voice,
                created_at: new Date().toISOString(),
              };
        if (send.kind === 'big')
          data = padToBytes(name, data, MAX_BODY_BYTES + send.overBy, send.padSeed);
        expect({ event: name, id: send.id, sha256 }, data);
        await event(index, {
          event: name,
          data,
          ...(send.kind !== 'big' && send.fault !== undefined ? { faults: [send.fault] } : {}),
        });
        return;
      }
      case 'failed': {
        const data = { id: send.id, kind: 'tts', voice: send.voice, reason: send.reason };
        expect({ event: 'audio.failed', id: send.id, record: 'failure' }, data);
        await event(index, { event: 'audio.failed', data });
        return;
      }
      case 'batch':
        return batch(send);
      case 'revoke': {
        const key = await sandbox.call('POST', '/sandbox/keys');
        const { id } = key.body as { id: string };
        expect({ event: 'key.revoked', id, record: 'revocation' }, {});
        const revoked = await sandbox.call(
          'POST',
          `/sandbox/keys/${encodeURIComponent(id)}/revoke`,
        );
        if (revoked.status !== 200) throw new Error(`revoke answered ${revoked.status}`);
        log.requested += 1;
        return;
      }
      case 'redeliver': {
        await made.get(send.of);
        const earlier = sentEvents.get(send.of);
        if (earlier === undefined) throw new Error(`send ${send.of} was never made`);
        await event(index, earlier);
        return;
      }
    }
  };
  const batch = async (send: Extract<PlannedSend, { kind: 'batch' }>) => {
    const answer = await sandbox.call(
      'POST',
      '/v1/tts/batch',
      { items: send.items, fail: send.fail },
      sandbox.info.key.token,
    );
    if (answer.status !== 202) throw new Error(`/v1/tts/batch answered ${answer.status}`);
    const { batch_id: batchId } = answer.body as { batch_id: string };
    log.requested += send.items.length;
    for (const [position, item] of send.items.entries()) {
      if (send.fail.includes(item.id)) {
        expect({ event: 'audio.failed', id: item.id, record: 'failure' }, { voice: item.voice });
        continue;
      }
      // The sandbox's CDN serves `<dir>/audio/<batch>/<position>.wav`: the bytes it sends.
      const wav = readFileSync(join(sandbox.dir, 'audio', batchId, `${position}.wav`));
      expect({ event: 'audio.ready', id: item.id, sha256: sha256Hex(wav) }, { voice: item.voice });
    }
  };

  const running = new Set<Promise<void>>();
  for (const [index, send] of plan.entries()) {
    const due = deps.startedAt + send.atMs;
    if (due > deps.stopAt) break;
    if (due > Date.now()) await sleep(due - Date.now());
    while (running.size >= IN_FLIGHT) await Promise.race(running);
    log.sends[send.kind] = (log.sends[send.kind] ?? 0) + 1;
    const sending = one(send, index)
      .catch((error: unknown) => {
        log.refusedByTheSandbox.push(`${send.kind} #${index}: ${String(error)}`);
      })
      .finally(() => running.delete(sending));
    running.add(sending);
    made.set(index, sending);
  }
  await Promise.all(running);
  return log;
}
