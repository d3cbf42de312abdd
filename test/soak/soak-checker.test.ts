import { createHash } from 'node:crypto';
import { check, shownAs } from '../../soak/checker';
import { expectedMessageId } from '../../soak/message-id';
import type {
  ExpectedItem,
  ForwardedMessage,
  Observations,
  SentDelivery,
} from '../../soak/observations';

// The soak's checker, fed by hand: what it calls ok, lost, refused, in flight, unexpected and
// duplicated, and when it calls a run void.

const SHA = 'a'.repeat(64);
const ALL = ['http', 'nats', 'amqp'];

function item(event: string, id: string, extra: Partial<ExpectedItem> = {}): ExpectedItem {
  return {
    event,
    id,
    wants: ALL,
    ...(event === 'audio.ready' ? { sha256: SHA } : {}),
    ...extra,
  };
}

function delivered(event: string, id: string, state = 'delivered'): SentDelivery {
  return { id: `dlv_${event}_${id}`, event, dataId: id, state, lastAnswer: '202' };
}

function message(event: string, id: string, sha?: string): ForwardedMessage {
  return {
    messageId: expectedMessageId(event, id),
    type: event,
    id,
    ...(sha === undefined ? {} : { storedSha256: sha }),
  };
}

/** Observations of a run in which every item is everywhere it should be. */
function whole(items: readonly ExpectedItem[]): Observations {
  const stored = items.filter((i) => i.sha256 !== undefined);
  const messages = (name: string) =>
    items.filter((i) => i.wants.includes(name)).map((i) => message(i.event, i.id, i.sha256));
  return {
    requested: items.length,
    sent: items.map((i) => delivered(i.event, i.id)),
    expected: items,
    store: stored.map((i) => ({
      event: i.event,
      id: i.id,
      metadataSha256: SHA,
      contentSha256: SHA,
    })),
    archive: items.map((i) => ({ event: i.event, id: i.id })),
    destinations: { http: messages('http'), nats: messages('nats'), amqp: messages('amqp') },
    records: {
      failures: items.filter((i) => i.record === 'failure').map((i) => i.id),
      revocations: items.filter((i) => i.record === 'revocation').map((i) => i.id),
    },
  };
}

const ITEMS = [
  item('audio.ready', 'plain-1'),
  item('audio.ready', '日本語 / ..\u0000'),
  item('audio.failed', 'f-1', { record: 'failure' }),
  item('key.revoked', 'key_1', { record: 'revocation' }),
  item('voice.converted', 'x'.repeat(256), { sha256: SHA, wants: ['http', 'nats'] }),
];

it('a run where every acknowledged item is everywhere: all ok, nothing lost or unexpected, not void', () => {
  const verdict = check(whole(ITEMS));
  expect(verdict).toMatchObject({
    sent: 5,
    ok: 5,
    lost: 0,
    refused: 0,
    in_flight: 0,
    unexpected: 0,
    duplicated: 0,
    void: false,
  });
});

it('a deliberately dropped item is lost, and says where it is missing', () => {
  const observations = whole(ITEMS);
  const dropped: Observations = {
    ...observations,
    archive: observations.archive.filter((e) => e.id !== 'f-1'),
    destinations: {
      ...observations.destinations,
      nats: (observations.destinations.nats ?? []).filter((m) => m.id !== 'plain-1'),
    },
    store: observations.store.map((e) =>
      e.id === '日本語 / ..\u0000' ? { ...e, contentSha256: 'b'.repeat(64) } : e,
    ),
  };
  const verdict = check(dropped);
  expect(verdict.ok).toBe(2);
  expect(verdict.lost).toBe(3);
  expect(verdict.void).toBe(false);
  expect(verdict.lostItems.map((l) => [l.id, l.missing])).toEqual([
    ['plain-1', ['forward:nats']],
    ['日本語 / ..\u0000', ['store (bytes differ from the CDN)']],
    ['f-1', ['archive']],
  ]);
});

it('an item stored whole but forwarded with another sha256, or missing its record, is lost', () => {
  const observations = whole(ITEMS);
  const verdict = check({
    ...observations,
    destinations: {
      ...observations.destinations,
      http: (observations.destinations.http ?? []).map((m) =>
        m.id === 'plain-1' ? { ...m, storedSha256: 'c'.repeat(64) } : m,
      ),
    },
    records: { failures: [], revocations: ['key_1'] },
  });
  expect(verdict.lostItems.map((l) => [l.id, l.missing])).toEqual([
    ['plain-1', ['forward:http (stored.sha256 differs)']],
    ['f-1', ['record:failure']],
  ]);
});

it('an injected extra item is unexpected, once per place, and so is a message its filter excludes or under the wrong id', () => {
  const observations = whole(ITEMS);
  const verdict = check({
    ...observations,
    store: [
      ...observations.store,
      { event: 'audio.ready', id: 'never-sent', metadataSha256: SHA, contentSha256: SHA },
    ],
    archive: [...observations.archive, { event: 'audio.ready', id: 'never-sent' }],
    destinations: {
      ...observations.destinations,
      http: [
        ...(observations.destinations.http ?? []),
        message('audio.ready', 'never-sent', SHA),
        message('audio.ready', 'never-sent', SHA),
        { ...message('audio.failed', 'f-1'), messageId: 'audio.failed:f-1:wrong' },
      ],
      amqp: [
        ...(observations.destinations.amqp ?? []),
        message('voice.converted', 'x'.repeat(256), SHA),
      ],
    },
  });
  expect(verdict.ok).toBe(5);
  expect(verdict.lost).toBe(0);
  expect(verdict.unexpectedItems.map((u) => [u.where, u.id.slice(0, 10), u.why])).toEqual([
    ['store', 'never-sent', 'never sent'],
    ['archive', 'never-sent', 'never sent'],
    ['forward:http', 'never-sent', 'never sent'],
    ['forward:http', 'f-1', 'under id audio.failed:f-1:wrong'],
    ['forward:amqp', 'xxxxxxxxxx', 'its filter does not want it'],
  ]);
  expect(verdict.unexpected).toBe(5);
});

it('duplicates are counted per item, and are no loss', () => {
  const observations = whole(ITEMS);
  const verdict = check({
    ...observations,
    destinations: {
      ...observations.destinations,
      amqp: [...(observations.destinations.amqp ?? []), message('key.revoked', 'key_1')],
      nats: [
        ...(observations.destinations.nats ?? []),
        message('key.revoked', 'key_1'),
        message('key.revoked', 'key_1'),
      ],
    },
  });
  expect(verdict).toMatchObject({ ok: 5, lost: 0, unexpected: 0, duplicated: 1 });
  expect(verdict.duplicatedItems).toEqual([
    { event: 'key.revoked', id: 'key_1', copies: { nats: 3, amqp: 2 } },
  ]);
});

it('refused deliveries count with the receiver’s last answer; pending ones are in flight; re-deliveries of one item are each judged', () => {
  const observations = whole(ITEMS);
  const verdict = check({
    ...observations,
    requested: 8,
    sent: [
      ...observations.sent,
      { id: 'dlv_big', event: 'audio.ready', dataId: 'big', state: 'exhausted', lastAnswer: '413' },
      { id: 'dlv_late', event: 'audio.ready', dataId: 'late', state: 'pending' },
      delivered('audio.failed', 'f-1'),
    ],
  });
  expect(verdict).toMatchObject({
    sent: 8,
    ok: 6,
    lost: 0,
    refused: 1,
    in_flight: 1,
    void: false,
    refusedReasons: { '413': 1 },
  });
});

it('is void when a delivery is in a state it does not know, or was acknowledged with nothing to judge it by', () => {
  const observations = whole(ITEMS);
  const odd = check({
    ...observations,
    sent: [
      ...observations.sent.slice(1),
      { ...delivered('audio.ready', 'plain-1'), state: 'lost-in-space' },
    ],
  });
  expect(odd.void).toBe(true);
  expect(odd.sent).not.toBe(odd.ok + odd.lost + odd.refused + odd.in_flight);
  const unknown = check({
    ...observations,
    requested: 6,
    sent: [...observations.sent, delivered('audio.ready', 'nobody-planned-this')],
  });
  expect(unknown.void).toBe(true);
  expect(unknown.voidReasons.join()).toMatch(/nothing says what it should leave/);
});

it('is void when the sandbox holds another number of deliveries than the harness asked for', () => {
  const verdict = check({ ...whole(ITEMS), requested: 6 });
  expect(verdict.void).toBe(true);
  expect(verdict.voidReasons).toEqual(['the harness asked for 6 deliveries, the sandbox holds 5']);
});

it('message ids: plain printable ASCII up to 200 bytes, else the SHA-256 of the id', () => {
  expect(expectedMessageId('audio.ready', 'tts_1')).toBe('audio.ready:tts_1');
  const hashed = (id: string) =>
    `audio.ready:sha256:${createHash('sha256').update(id, 'utf8').digest('hex')}`;
  expect(expectedMessageId('audio.ready', 'a b')).toBe(hashed('a b'));
  expect(expectedMessageId('audio.ready', 'é')).toBe(hashed('é'));
  const longest = 'x'.repeat(200 - 'audio.ready:'.length);
  expect(expectedMessageId('audio.ready', longest)).toBe(`audio.ready:${longest}`);
  expect(expectedMessageId('audio.ready', `${longest}x`)).toBe(hashed(`${longest}x`));
});

describe('shownAs: a record listed for an id', () => {
  it('matches the id itself, or its first characters and … when the record cut it', () => {
    const long = `𝄞${'x'.repeat(300)}`;
    expect(shownAs('item-1', 'item-1')).toBe(true);
    expect(shownAs(long, `${long.slice(0, 40)}…`)).toBe(true);
    expect(shownAs(long, long.slice(0, 40))).toBe(false);
    expect(shownAs('item-2', 'item-1')).toBe(false);
    expect(shownAs('other', `${long.slice(0, 40)}…`)).toBe(false);
  });
});
