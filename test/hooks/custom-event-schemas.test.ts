import { z } from 'zod';
import { events as exampleEvents } from '../../src/examples/events';
import { customEvents, EventDefinitionError } from '../../src/hooks/custom-events';
import { defineEvent } from '../../src/hooks/define-event';
import { parseEvent } from '../../src/provider-spec/parse-event';

const bytes = (value: unknown) => Buffer.from(JSON.stringify(value));
const custom = customEvents(exampleEvents);
const converted = {
  event: 'voice.converted',
  data: { id: 'vc_1', audio_url: 'https://cdn.example/vc_1.wav', voice: 'sage' },
};

describe('customEvents', () => {
  const nothing = () => Promise.resolve();
  const event = (name: string) =>
    defineEvent({ name, data: z.object({ id: z.string() }), handle: nothing });

  it('keeps each event made by defineEvent under its name', () => {
    expect([...custom.keys()]).toEqual(['voice.converted']);
  });

  it.each([
    [
      [event('audio.ready')],
      'src/custom/events.ts: event "audio.ready" is built in; use a hook in src/custom/hooks.ts to react to it',
    ],
    [
      [event('voice.converted'), event('voice.converted')],
      'src/custom/events.ts: event "voice.converted" is declared twice',
    ],
    [
      [{ name: 'x', data: z.object({ id: z.string() }), handle: nothing }],
      "src/custom/events.ts: events[0] was not made by defineEvent (import it from the framework's index)",
    ],
    [[event('')], 'src/custom/events.ts: events[0] has no name'],
  ])('refuses what cannot be served, in one line: %#', (definitions, message) => {
    expect(() => customEvents(definitions)).toThrow(new EventDefinitionError(message));
  });
});

describe('parseEvent with custom events', () => {
  it('a custom event whose data fits its schema is known, with the delivery as it was sent', () => {
    expect(parseEvent(bytes(converted), custom)).toEqual({
      ok: true,
      known: true,
      event: converted,
      text: JSON.stringify(converted),
    });
  });

  it('a custom event whose data fails its schema is refused with each problem under data.', () => {
    const parsed = parseEvent(
      bytes({
        event: 'voice.converted',
        data: { id: 'vc_2', audio_url: 'http://cdn.example/a.wav' },
      }),
      custom,
    );
    expect(parsed).toEqual({
      ok: false,
      detail: expect.stringMatching(
        /^invalid voice\.converted delivery: data\.audio_url: .+; data\.voice: .+$/,
      ),
    });
  });

  it('the envelope is checked first: a custom event without data.id is refused as any other', () => {
    expect(
      parseEvent(bytes({ event: 'voice.converted', data: { voice: 'sage' } }), custom),
    ).toEqual({
      ok: false,
      detail: 'data.id must be a non-empty string',
    });
  });

  it('without the definition the same delivery is an unknown event (acknowledged, dropped)', () => {
    expect(parseEvent(bytes(converted))).toEqual({
      ok: true,
      known: false,
      event: 'voice.converted',
      id: 'vc_1',
    });
  });

  it('built-in events are still parsed by their own schemas', () => {
    expect(parseEvent(bytes({ event: 'key.revoked', data: { id: 'k' } }), custom)).toMatchObject({
      ok: true,
      known: true,
    });
  });
});
