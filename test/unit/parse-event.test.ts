import { parseEvent } from '../../src/webhooks/parse-event';
import { sampleDelivery } from '../../src/webhooks/sample-delivery';

const bytes = (value: unknown) =>
  Buffer.from(typeof value === 'string' ? value : JSON.stringify(value));

describe('parseEvent', () => {
  it('parses each known event and keeps fields the spec does not show', () => {
    const ready = sampleDelivery('audio.ready', { id: 'a1', data: { extra: { nested: 1 } } });
    const parsed = parseEvent(bytes({ ...ready, delivery_id: 'd-1' }));
    expect(parsed).toEqual({ known: true, event: { ...ready, delivery_id: 'd-1' } });

    for (const event of ['audio.failed', 'key.revoked']) {
      const body = { event, data: { id: 'x1', reason: 'anything' } };
      expect(parseEvent(bytes(body))).toEqual({ known: true, event: body });
    }
  });

  it('reports an unknown event name with its id', () => {
    expect(parseEvent(bytes({ event: 'voice.created', data: { id: 'v1' } }))).toEqual({
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
  ])('rejects %s', (_name, body, message) => {
    expect(() => parseEvent(Buffer.isBuffer(body) ? body : bytes(body))).toThrow(message);
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
  ])('rejects audio.ready with %s', (_name, data, message) => {
    const body = sampleDelivery('audio.ready', { data });
    expect(() => parseEvent(bytes(body))).toThrow(message);
    try {
      parseEvent(bytes(body));
    } catch (error: unknown) {
      expect(error).toMatchObject({ status: 400 });
    }
  });

  it('accepts fractional seconds in created_at', () => {
    const body = sampleDelivery('audio.ready', {
      data: { created_at: '2026-11-21T10:00:00.123456Z' },
    });
    expect(parseEvent(bytes(body)).known).toBe(true);
  });
});
