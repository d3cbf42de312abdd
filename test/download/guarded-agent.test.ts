import { request } from 'undici';
import { createGuardedAgent, type Resolver } from '../../src/download/guarded-agent';
import { audio, startLocalCdn, type LocalCdn } from '../../harness/local-cdn';

let cdn: LocalCdn;
beforeAll(async () => {
  cdn = await startLocalCdn();
  cdn.route('/a.mp3', audio(Buffer.from('audio')));
});
afterAll(() => cdn.close());

const port = () => new URL(cdn.origin).port;

function agent(allowPrivateIps: boolean, resolve?: Resolver) {
  return createGuardedAgent({
    allowPrivateIps,
    ca: cdn.ca,
    connectTimeoutMs: 2000,
    headersTimeoutMs: 2000,
    bodyIdleTimeoutMs: 2000,
    ...(resolve === undefined ? {} : { resolve }),
  });
}

/** A stand-in for DNS that answers every name with `address`. */
const answering =
  (address: string): Resolver =>
  (_hostname, callback) => {
    callback(null, [{ address, family: address.includes(':') ? 6 : 4 }]);
  };

// Every form the IANA special-purpose registries set apart, including those the first version
// judged public (`::7f00:1` was attempted).
const SPECIAL = [
  '127.0.0.1',
  '::7f00:1',
  '::127.0.0.1',
  '::ffff:127.0.0.1',
  '2002:7f00:1::1',
  '2001::1',
  '64:ff9b:1::7f00:1',
  '64:ff9b::7f00:1',
  '100::1',
  '2001:db8::1',
  '192.88.99.1',
  '198.18.0.1',
  '240.0.0.1',
  '255.255.255.255',
  '169.254.169.254',
];

const url = (host: string) => `https://${host.includes(':') ? `[${host}]` : host}:${port()}/a.mp3`;

describe('the SSRF guard refuses before connecting', () => {
  it.each(SPECIAL)('%s as an IP literal', async (address) => {
    const dispatcher = agent(false);
    try {
      await expect(request(url(address), { dispatcher })).rejects.toThrow(/is not public; refused/);
    } finally {
      await dispatcher.close();
    }
  });

  it.each(SPECIAL)('%s as the DNS answer for a name', async (address) => {
    const dispatcher = agent(false, answering(address));
    try {
      await expect(request(url('cdn.example.test'), { dispatcher })).rejects.toThrow(
        /cdn\.example\.test resolves to .*, which is not public/,
      );
    } finally {
      await dispatcher.close();
    }
  });

  it('the resolver is the one connections use: allowed, the same name reaches the local CDN', async () => {
    const dispatcher = agent(true, answering('127.0.0.1'));
    try {
      // The certificate names localhost; the answer of the resolver decides where it connects.
      const res = await request(`https://localhost:${port()}/a.mp3`, { dispatcher });
      expect(res.statusCode).toBe(200);
      expect(await res.body.text()).toBe('audio');
    } finally {
      await dispatcher.close();
    }
  });
});

describe('the SSRF guard refuses once connected', () => {
  /**
   * A stand-in for DNS whose answer changes after the guard read it: the filter sees a public
   * address, the connect then reads the loopback one. A rebinding between check and use is
   * caught only by the check of the socket's remote address.
   */
  const rebinding: Resolver = (_hostname, callback) => {
    let reads = 0;
    const answer = {
      family: 4,
      get address() {
        reads += 1;
        return reads === 1 ? '93.184.215.14' : '127.0.0.1';
      },
    };
    callback(null, [answer]);
  };

  it('a name whose answer turns to loopback between the check and the connect', async () => {
    const dispatcher = agent(false, rebinding);
    const hits = cdn.hits.get('/a.mp3') ?? 0;
    try {
      await expect(request(`https://localhost:${port()}/a.mp3`, { dispatcher })).rejects.toThrow(
        /localhost resolves to 127\.0\.0\.1, which is not public; refused/,
      );
      expect(cdn.hits.get('/a.mp3') ?? 0).toBe(hits);
    } finally {
      await dispatcher.close();
    }
  });
});
