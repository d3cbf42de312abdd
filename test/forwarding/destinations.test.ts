import { parseDestinations, type Destination } from '../../src/forwarding/settings/destinations';
import { forwardJobId } from '../../src/forwarding/forward-queue';

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
  expect(http).toMatchObject({
    kind: 'http',
    name: expect.stringMatching(/^https:\/\/hooks\.example\.com:8443~[0-9a-f]{8}$/),
  });
  expect(http?.url.password).toBe('pw1');
  expect(nats).toMatchObject({
    kind: 'nats',
    name: expect.stringMatching(/^nats:\/\/10\.0\.0\.5:4222~[0-9a-f]{8}$/),
    subject: 'audio.stored',
  });
  expect(amqp).toMatchObject({
    kind: 'amqp',
    name: expect.stringMatching(/^amqp:\/\/mq:5673~[0-9a-f]{8}$/),
    exchange: 'audio',
    routingKey: 'stored',
  });
  // No user, password, path or query: Slack's, Discord's and Teams' URLs hold their secret in the path.
  expect(JSON.stringify([http?.name, nats?.name, amqp?.name])).not.toMatch(
    /pw\d|token|abc|bot|app|\/in|audio|prod/,
  );
});

it('tells two destinations on one host apart, and a URL with another password is the same one', () => {
  const slack = (path: string) => `https://hooks.slack.com/services/${path}`;
  const [a, b] = parsed(`${slack('T0/B0/s3cr3t')},${slack('T0/B1/0th3r')}`);
  expect(a?.name).not.toBe(b?.name);
  expect(a?.name).not.toContain('s3cr3t');
  expect(problem(`https://u:one@h.example/x,https://u:two@h.example/x`)).toBe(
    'entries 1 and 2 name one destination',
  );
});

it.each([
  ['ftp://x/y', 'entry 1: unknown scheme ftp:'],
  ['https://a.example/x,::', 'entry 2 is not a URL'],
  ['nats://h:4222/audio.*', 'the path must be a subject'],
  ['nats://h:4222/a?x=1', 'no query is read'],
  ['amqp://h/?exchange=e&heartbeat=5', 'unknown parameter heartbeat'],
  ['amqp://h/', 'needs exchange= and/or routing_key='],
  ['https://a.example/x,https://user:pw@a.example/x', 'entries 1 and 2 name one destination'],
  ['https://a.example/x,', 'entry 2 is empty (a comma too many?)'],
  ['https://a.example/x#frag', 'a URL with a #fragment'],
])('%s: %s', (raw, expected) => {
  expect(problem(raw)).toContain(expected);
  expect(problem(raw)).not.toContain('pw');
  expect(problem(raw)).not.toMatch(/example\/x/);
});

it("a forward job's id follows from the delivery job's, apart from it, without a colon", () => {
  expect(forwardJobId('3f1c')).toBe(forwardJobId('3f1c'));
  expect(forwardJobId('3f1c')).not.toBe('3f1c');
  expect(forwardJobId('3f1c')).not.toContain(':');
});
