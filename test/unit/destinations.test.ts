import { parseDestinations, type Destination } from '../../src/forward/destinations';
import { forwardJobId } from '../../src/forward/forward-queue';

function parsed(raw: string): Destination[] {
  const result = parseDestinations(raw);
  if ('problem' in result) throw new Error(result.problem);
  return result.destinations;
}

const problem = (raw: string) => (parseDestinations(raw) as { problem?: string }).problem;

it('names each destination without its credentials, and keeps them for the client', () => {
  const [http, nats, amqp] = parsed(
    'https://bot:pw1@hooks.example.com:8443/in?token=abc, nats://u:pw2@10.0.0.5/audio.stored, amqp://app:pw3@mq:5673/prod?exchange=audio&routing_key=stored',
  );
  expect(http).toMatchObject({ kind: 'http', name: 'https://hooks.example.com:8443/in' });
  expect(http?.url.password).toBe('pw1');
  expect(nats).toMatchObject({
    kind: 'nats',
    name: 'nats://10.0.0.5:4222/audio.stored',
    subject: 'audio.stored',
  });
  expect(amqp).toMatchObject({
    kind: 'amqp',
    name: 'amqp://mq:5673/prod?exchange=audio&routing_key=stored',
    exchange: 'audio',
    routingKey: 'stored',
  });
  expect(JSON.stringify([http?.name, nats?.name, amqp?.name])).not.toMatch(/pw\d|token|abc/);
});

it.each([
  ['ftp://x/y', 'entry 1: unknown scheme ftp:'],
  ['https://a.example/x,::', 'entry 2 is not a URL'],
  ['nats://h:4222/audio.*', 'the path must be a subject'],
  ['nats://h:4222/a?x=1', 'no query is read'],
  ['amqp://h/?exchange=e&heartbeat=5', 'unknown parameter heartbeat'],
  ['amqp://h/', 'needs exchange= and/or routing_key='],
  ['https://a.example/x,https://user:pw@a.example/x', 'names https://a.example/x twice'],
  ['https://a.example/x#frag', 'a URL with a #fragment'],
])('%s: %s', (raw, expected) => {
  expect(problem(raw)).toContain(expected);
  expect(problem(raw)).not.toContain('pw');
});

it("a forward job's id follows from the delivery job's, apart from it, without a colon", () => {
  expect(forwardJobId('3f1c')).toBe(forwardJobId('3f1c'));
  expect(forwardJobId('3f1c')).not.toBe('3f1c');
  expect(forwardJobId('3f1c')).not.toContain(':');
});
