import fc from 'fast-check';
import { forwardMessage } from '../../src/forwarding/forward-message';
import { messageId } from '../../src/forwarding/message-id';
import type { Delivery } from '../../src/provider-spec/delivery';
import { jsonMember } from '../../src/provider-spec/json-member';

/** Any JSON value, written with any of JSON's spellings of numbers and white space. */
const json = fc.jsonValue();

it('jsonMember gives the text of a member as written: 1e20 stays 1e20', () => {
  expect(jsonMember('{"event":"x","data":[1e20,1E-7, 0.10]}', 'data')).toBe('[1e20,1E-7, 0.10]');
  expect(jsonMember('{ "data" : {"a":"}\\"]"} , "b":1 }', 'data')).toBe('{"a":"}\\"]"}');
  expect(jsonMember('{"data":1,"data":2}', 'data')).toBe('2');
  expect(jsonMember('{"dat\\u0061":true}', 'data')).toBe('true');
  expect(jsonMember('{"other":1}', 'data')).toBeUndefined();
  expect(jsonMember('[1]', 'data')).toBeUndefined();
});

it('jsonMember agrees with JSON.parse on any object, however it is spaced', () => {
  const objectAndKey = fc
    .dictionary(fc.string(), json, { minKeys: 1 })
    .chain((object) =>
      fc.tuple(fc.constant(object), fc.constantFrom(...Object.keys(object), '\u0000absent')),
    );
  fc.assert(
    fc.property(objectAndKey, fc.constantFrom(0, 1, '\t', '\n  '), ([object, key], space) => {
      const text = JSON.stringify(object, null, space);
      const member = jsonMember(text, key);
      if (!Object.prototype.hasOwnProperty.call(object, key)) expect(member).toBeUndefined();
      else expect(JSON.parse(member ?? 'null')).toEqual(JSON.parse(JSON.stringify(object[key])));
    }),
    { numRuns: 500 },
  );
});

it('the message id is <event>:<id> where every carrier holds it, else a hash of the id', () => {
  expect(messageId('audio.ready', 'tts_123')).toBe('audio.ready:tts_123');
  const hashed = /^audio\.ready:sha256:[0-9a-f]{64}$/;
  for (const id of ['tts_日本語', 'a\nb', 'a b', 'x'.repeat(250), 'é', '\u007f']) {
    expect(messageId('audio.ready', id)).toMatch(hashed);
  }
  expect(messageId('audio.ready', 'x'.repeat(188))).toBe(`audio.ready:${'x'.repeat(188)}`);
  expect(messageId('audio.ready', 'x'.repeat(189))).toMatch(hashed);
});

it('any id: the message id is printable ASCII of at most 200 bytes, one per id', () => {
  fc.assert(
    fc.property(
      fc.string({ unit: 'grapheme', maxLength: 300 }),
      fc.string({ unit: 'binary', maxLength: 300 }),
      (a, b) => {
        fc.pre(a !== '' && b !== '');
        for (const id of [a, b]) {
          const mid = messageId('audio.ready', id);
          expect(mid).toMatch(/^[!-~]{1,200}$/);
          expect(Buffer.byteLength(mid)).toBeLessThanOrEqual(200);
        }
        if (a !== b) expect(messageId('audio.ready', a)).not.toBe(messageId('audio.ready', b));
      },
    ),
    { numRuns: 1000 },
  );
});

it("the message holds the delivery's data as sent, and id as sent", () => {
  const sent = '{"event":"audio.ready","data":{"id":"tts_日本語\\n","n":[1e20,1e20]}}';
  const delivery = JSON.parse(sent) as Delivery;
  const message = forwardMessage(
    delivery,
    sent,
    new Date('2026-11-25T10:00:00Z'),
    undefined,
    undefined,
  );
  expect(message.body).toBe(
    '{"type":"audio.ready","id":"tts_日本語\\n","timestamp":"2026-11-25T10:00:00.000Z","data":{"id":"tts_日本語\\n","n":[1e20,1e20]}}',
  );
  expect(JSON.parse(message.body)).toMatchObject({ id: 'tts_日本語\n' });
});

it("the message carries its job's traceparent; a job without a valid one gets a trace of its own", () => {
  const sent = '{"event":"key.revoked","data":{"id":"k1"}}';
  const delivery = JSON.parse(sent) as Delivery;
  const at = new Date('2026-11-25T10:00:00Z');
  const carried = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  expect(forwardMessage(delivery, sent, at, undefined, carried).traceparent).toBe(carried);
  const traceparent = /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/;
  for (const other of [undefined, '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7']) {
    const made = forwardMessage(delivery, sent, at, undefined, other).traceparent;
    expect(made).toMatch(traceparent);
    expect(made).not.toContain('4bf92f3577b34da6a3ce929d0e0e4736');
  }
});
