import { exceedsJsonDepth, MAX_JSON_DEPTH } from '../../src/provider-spec/parse-event';
import { parseEvent } from '../../src/provider-spec/parse-event';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';

const bytes = (value: unknown) =>
  Buffer.from(typeof value === 'string' ? value : JSON.stringify(value));

/** `{"event":"audio.failed","data":{"id":"x","extra":[[[…]]]}}` with `levels` arrays inside. */
const nested = (levels: number) =>
  Buffer.from(
    `{"event":"audio.failed","data":{"id":"x","extra":${'['.repeat(levels)}${']'.repeat(levels)}}}`,
  );

describe('parseEvent', () => {
  it('parses each known event and keeps fields the spec does not show', () => {
    const ready = sampleDelivery('audio.ready', { id: 'a1', data: { extra: { nested: 1 } } });
    const parsed = parseEvent(bytes({ ...ready, delivery_id: 'd-1' }));
    // The event as sent, and the body's very text: what the queue keeps.
    expect(parsed).toEqual({
      ok: true,
      known: true,
      event: { ...ready, delivery_id: 'd-1' },
      text: JSON.stringify({ ...ready, delivery_id: 'd-1' }),
    });

    for (const event of ['audio.failed', 'key.revoked']) {
      const body = { event, data: { id: 'x1', reason: 'anything' } };
      expect(parseEvent(bytes(body))).toEqual({
        ok: true,
        known: true,
        event: body,
        text: JSON.stringify(body),
      });
    }
  });

  it('reports an unknown event name with its id', () => {
    expect(parseEvent(bytes({ event: 'voice.created', data: { id: 'v1' } }))).toEqual({
      ok: true,
      known: false,
      event: 'voice.created',
      id: 'v1',
    });
  });

  it.each([
    ['not JSON', 'nope', /not valid UTF-8 JSON/],
    ['invalid UTF-8', Buffer.from([0x7b, 0xff, 0x7d]), /not valid UTF-8 JSON/],
    ['an array', [], /JSON object/],
    ['null', 'null', /JSON object/],
    ['no event', { data: { id: 'a' } }, /event must be/],
    ['numeric event', { event: 1, data: { id: 'a' } }, /event must be/],
    ['no data', { event: 'audio.failed' }, /data must be an object/],
    ['array data', { event: 'audio.failed', data: [] }, /data must be an object/],
    ['empty id', { event: 'audio.failed', data: { id: '' } }, /data.id must be/],
    ['numeric id', { event: 'key.revoked', data: { id: 7 } }, /data.id must be/],
    [
      'a lone high surrogate in the id',
      '{"event":"audio.failed","data":{"id":"a\\ud800"}}',
      /well-formed Unicode/,
    ],
    [
      'a lone low surrogate in the id',
      '{"event":"audio.ready","data":{"id":"a\\udbff"}}',
      /well-formed Unicode/,
    ],
    ['10,000 nested arrays in an extra field', nested(10_000), /nests deeper than 32 levels/],
    ['a million open brackets', Buffer.from('['.repeat(1_000_000)), /not valid UTF-8 JSON/],
  ])('refuses %s', (_name, body, message) => {
    const parsed = parseEvent(Buffer.isBuffer(body) ? body : bytes(body));
    expect(parsed).toEqual({ ok: false, detail: expect.stringMatching(message) });
  });

  it('acknowledges an unknown event however deep it nests: the bound is for what is stored', () => {
    const deep = `{"event":"voice.cloned","data":{"id":"v1","extra":${'['.repeat(10_000)}${']'.repeat(10_000)}}}`;
    expect(parseEvent(Buffer.from(deep))).toEqual({
      ok: true,
      known: false,
      event: 'voice.cloned',
      id: 'v1',
    });
  });

  it('takes a paired surrogate (an emoji) in the id', () => {
    const parsed = parseEvent(bytes({ event: 'audio.failed', data: { id: 'item-🎵' } }));
    expect(parsed).toMatchObject({ ok: true, known: true });
  });

  it('takes nesting up to the limit', () => {
    // The body itself and `data` are two levels.
    expect(parseEvent(nested(MAX_JSON_DEPTH - 2))).toMatchObject({ ok: true });
    expect(parseEvent(nested(MAX_JSON_DEPTH - 1))).toMatchObject({ ok: false });
  });

  it.each([
    [
      'an http audio_url',
      { audio_url: 'http://cdn.example.com/a.mp3' },
      /audio_url: must be an https URL/,
    ],
    ['a credentialed audio_url', { audio_url: 'https://u:p@cdn.example.com/a.mp3' }, /audio_url/],
    [
      'a non-UTC created_at',
      { created_at: '2026-11-21T10:00:00+02:00' },
      /created_at: must be an ISO 8601 UTC/,
    ],
    ['a missing voice', { voice: undefined }, /voice/],
    ['an empty kind', { kind: '' }, /kind/],
  ])('refuses audio.ready with %s', (_name, data, message) => {
    const body = sampleDelivery('audio.ready', { data });
    expect(parseEvent(bytes(body))).toEqual({ ok: false, detail: expect.stringMatching(message) });
  });

  it('accepts fractional seconds in created_at', () => {
    const body = sampleDelivery('audio.ready', {
      data: { created_at: '2026-11-21T10:00:00.123456Z' },
    });
    expect(parseEvent(bytes(body))).toMatchObject({ ok: true, known: true });
  });
});

describe('exceedsJsonDepth', () => {
  it.each([
    ['flat', '{"a":1}', 1, false],
    ['exactly at the limit', '[[[]]]', 3, false],
    ['one past', '[[[[]]]]', 3, true],
    ['brackets inside strings do not count', '{"a":"[[[[[[[["}', 1, false],
    ['escaped quotes keep the string open', '{"a":"\\"[[[[["}', 1, false],
    ['an escaped backslash closes it', '{"a":"\\\\","b":[[[]]]}', 3, true],
  ])('%s', (_name, text, max, expected) => {
    expect(exceedsJsonDepth(Buffer.from(text), max)).toBe(expected);
  });
});
