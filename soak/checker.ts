import { expectedMessageId } from './message-id.js';
import type { ExpectedItem, ForwardedMessage, Observations } from './observations.js';

/**
 * THE CHECKER: every delivery the sandbox sent, classified in Jepsen's terms from observations
 * alone (pure; test/soak/soak-checker.test.ts feeds it by hand):
 *
 * - ok: acknowledged (2xx), and its item is where it should be: stored whole with the CDN's
 *   SHA-256 (events that store audio), archived, forwarded to every destination that wants it
 *   under the message id docs/forwarding.md defines, recorded where the CLI lists it;
 * - lost: acknowledged, and missing from one of those places (`missing` says which);
 * - refused: the sandbox gave up (exhausted), with the receiver's last answer as the reason;
 * - in_flight: still pending at the cutoff;
 * - unexpected (counted apart, per place): something stored, archived or forwarded that was never
 *   sent, or forwarded to a destination whose filter does not want it, or under another id;
 * - duplicated (counted apart, per item): a destination received its message more than once
 *   (allowed: forwarding is at least once).
 *
 * The run is void when sent ≠ ok + lost + refused + in_flight (a delivery in a state the checker
 * does not know, or acknowledged with no expectation to judge it by), or when the sandbox holds
 * another number of deliveries than the harness asked for: its figures then mean nothing.
 */
export interface LostItem {
  readonly event: string;
  readonly id: string;
  readonly delivery: string;
  readonly missing: readonly string[];
}

export interface UnexpectedItem {
  readonly where: string;
  readonly event: string;
  readonly id: string;
  readonly why: string;
}

export interface DuplicatedItem {
  readonly event: string;
  readonly id: string;
  /** Copies received, by destination, where more than one. */
  readonly copies: Readonly<Record<string, number>>;
}

export interface Verdict {
  readonly sent: number;
  readonly ok: number;
  readonly lost: number;
  readonly refused: number;
  readonly in_flight: number;
  readonly unexpected: number;
  readonly duplicated: number;
  readonly void: boolean;
  readonly voidReasons: readonly string[];
  readonly lostItems: readonly LostItem[];
  readonly unexpectedItems: readonly UnexpectedItem[];
  readonly duplicatedItems: readonly DuplicatedItem[];
  /** Refusals by the receiver's last answer. */
  readonly refusedReasons: Readonly<Record<string, number>>;
}

/** One key per item; JSON, since an id may hold any character (NUL included). */
const keyOf = (event: string, id: string) => JSON.stringify([event, id]);

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group === undefined) groups.set(k, [item]);
    else group.push(item);
  }
  return groups;
}

/** Where an acknowledged item is missing; [] when it is everywhere it should be. */
function missingPlaces(
  item: ExpectedItem,
  observed: {
    readonly stored: Map<string, Observations['store'][number][]>;
    readonly archived: Set<string>;
    readonly byMessageId: ReadonlyMap<string, Map<string, ForwardedMessage[]>>;
    readonly records: Observations['records'];
  },
): string[] {
  const key = keyOf(item.event, item.id);
  const missing: string[] = [];
  if (item.sha256 !== undefined) {
    const entries = observed.stored.get(key) ?? [];
    if (entries.length === 0) missing.push('store');
    else if (
      !entries.some((e) => e.metadataSha256 === item.sha256 && e.contentSha256 === item.sha256)
    )
      missing.push(
        entries.some((e) => e.contentSha256 === undefined)
          ? 'store (metadata without audio)'
          : 'store (bytes differ from the CDN)',
      );
  }
  if (!observed.archived.has(key)) missing.push('archive');
  const messageId = expectedMessageId(item.event, item.id);
  for (const destination of item.wants) {
    const messages = (observed.byMessageId.get(destination)?.get(messageId) ?? []).filter(
      (m) => m.type === item.event && m.id === item.id,
    );
    if (messages.length === 0) missing.push(`forward:${destination}`);
    else if (item.sha256 !== undefined && !messages.some((m) => m.storedSha256 === item.sha256))
      missing.push(`forward:${destination} (stored.sha256 differs)`);
  }
  if (observed.records !== undefined && item.record !== undefined) {
    const listed =
      item.record === 'failure' ? observed.records.failures : observed.records.revocations;
    if (!listed.some((shown) => shownAs(item.id, shown))) missing.push(`record:${item.record}`);
  }
  return missing;
}

export function check(observations: Observations): Verdict {
  const expected = new Map(observations.expected.map((item) => [keyOf(item.event, item.id), item]));
  const sentKeys = new Set(observations.sent.map((d) => keyOf(d.event, d.dataId)));
  const observed = {
    stored: groupBy(observations.store, (e) => keyOf(e.event, e.id)),
    archived: new Set(observations.archive.map((e) => keyOf(e.event, e.id))),
    byMessageId: new Map(
      Object.entries(observations.destinations).map(([name, messages]) => [
        name,
        groupBy(messages, (m) => m.messageId),
      ]),
    ),
    records: observations.records,
  };

  const voidReasons: string[] = [];
  if (observations.requested !== observations.sent.length)
    voidReasons.push(
      `the harness asked for ${observations.requested} deliveries, the sandbox holds ${observations.sent.length}`,
    );
  let ok = 0;
  let refused = 0;
  let inFlight = 0;
  let unclassified = 0;
  const lostItems: LostItem[] = [];
  const refusedReasons: Record<string, number> = {};
  const judged = new Map<string, string[]>();
  for (const delivery of observations.sent) {
    const key = keyOf(delivery.event, delivery.dataId);
    if (delivery.state === 'pending') inFlight += 1;
    else if (delivery.state === 'exhausted') {
      refused += 1;
      const reason = delivery.lastAnswer ?? 'no answer recorded';
      refusedReasons[reason] = (refusedReasons[reason] ?? 0) + 1;
    } else if (delivery.state === 'delivered') {
      const item = expected.get(key);
      if (item === undefined) {
        unclassified += 1;
        voidReasons.push(
          `delivery ${delivery.id} was acknowledged, and nothing says what it should leave`,
        );
        continue;
      }
      const missing = judged.get(key) ?? missingPlaces(item, observed);
      judged.set(key, missing);
      if (missing.length === 0) ok += 1;
      else lostItems.push({ event: item.event, id: item.id, delivery: delivery.id, missing });
    } else {
      unclassified += 1;
      voidReasons.push(`delivery ${delivery.id} is in state ${JSON.stringify(delivery.state)}`);
    }
  }
  const sent = observations.sent.length;
  if (sent !== ok + lostItems.length + refused + inFlight && unclassified === 0)
    voidReasons.push('the classes do not add up to the deliveries sent');

  const unexpectedItems = findUnexpected(observations, sentKeys, expected);
  const duplicatedItems: DuplicatedItem[] = [];
  for (const key of judged.keys()) {
    const item = expected.get(key);
    if (item === undefined) continue;
    const messageId = expectedMessageId(item.event, item.id);
    const copies: Record<string, number> = {};
    for (const [name, byId] of observed.byMessageId) {
      const count = byId.get(messageId)?.length ?? 0;
      if (count > 1) copies[name] = count;
    }
    if (Object.keys(copies).length > 0)
      duplicatedItems.push({ event: item.event, id: item.id, copies });
  }
  return {
    sent,
    ok,
    lost: lostItems.length,
    refused,
    in_flight: inFlight,
    unexpected: unexpectedItems.length,
    duplicated: duplicatedItems.length,
    void: voidReasons.length > 0,
    voidReasons,
    lostItems,
    unexpectedItems,
    duplicatedItems,
    refusedReasons,
  };
}

/** What was stored, archived or forwarded that should not have been, once per place and item. */
function findUnexpected(
  observations: Observations,
  sentKeys: ReadonlySet<string>,
  expected: ReadonlyMap<string, ExpectedItem>,
): UnexpectedItem[] {
  const found = new Map<string, UnexpectedItem>();
  const add = (item: UnexpectedItem) => {
    found.set(JSON.stringify([item.where, item.event, item.id, item.why]), item);
  };
  for (const entry of observations.store)
    if (!sentKeys.has(keyOf(entry.event, entry.id)))
      add({ where: 'store', event: entry.event, id: entry.id, why: 'never sent' });
  for (const entry of observations.archive)
    if (!sentKeys.has(keyOf(entry.event, entry.id)))
      add({ where: 'archive', event: entry.event, id: entry.id, why: 'never sent' });
  for (const [name, messages] of Object.entries(observations.destinations)) {
    for (const message of messages) {
      const key = keyOf(message.type, message.id);
      const where = `forward:${name}`;
      if (!sentKeys.has(key))
        add({ where, event: message.type, id: message.id, why: 'never sent' });
      else if (message.messageId !== expectedMessageId(message.type, message.id))
        add({ where, event: message.type, id: message.id, why: `under id ${message.messageId}` });
      else if (expected.get(key)?.wants.includes(name) === false)
        add({ where, event: message.type, id: message.id, why: 'its filter does not want it' });
    }
  }
  return [...found.values()];
}

/**
 * Whether a record the CLI lists is the one of `id`: the id itself, or, for an id too long for a
 * record to keep whole, its first characters followed by `…` (as collect.ts writes them).
 */
export function shownAs(id: string, shown: string): boolean {
  return id === shown || (shown.endsWith('…') && id.startsWith(shown.slice(0, -1)));
}
