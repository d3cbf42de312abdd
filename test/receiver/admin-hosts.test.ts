import type { RequestListener } from 'node:http';
import request from 'supertest';
import { ADMIN_PATH } from '../../src/receiver/admin-dashboard';
import { createTestReceiver, type TestReceiver } from '../helpers/test-receiver';

// A DNS-rebinding page reaches the service under the attacker's own name, which the browser then
// sends as Host: on INTERNAL_PORT and on every /admin/* path that name gets 421, and nothing a
// browser keeps from /admin/* lands in its disk cache.

const PASSWORD = 'admin hosts test password';
const REBOUND = 'rebind.attacker.example';
const auth = `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}`;

let split: TestReceiver;
let shared: TestReceiver;
let internal: RequestListener;

beforeAll(async () => {
  [split, shared] = await Promise.all([
    createTestReceiver({
      ADMIN_PASSWORD: PASSWORD,
      ADMIN_READ_ONLY: 'false',
      INTERNAL_PORT: '9464',
      ADMIN_HOSTS: 'board.example.com',
    }),
    createTestReceiver({ ADMIN_PASSWORD: PASSWORD, ADMIN_READ_ONLY: 'false' }),
  ]);
  if (split.internal === undefined) throw new Error('INTERNAL_PORT builds an internal app');
  internal = split.internal;
});
afterAll(async () => {
  await Promise.all([split.close(), shared.close()]);
});

/** 421 with a detail naming ADMIN_HOSTS, and on /admin/* marked no-store. */
const misdirected = (res: request.Response, path: string) => {
  expect(res.status).toBe(421);
  expect(res.body).toEqual({ detail: expect.stringContaining('ADMIN_HOSTS') });
  expect(res.headers['cache-control']).toBe(/^\/admin/i.test(path) ? 'no-store' : undefined);
};

describe('a Host that names the service by no allowed name: 421', () => {
  it.each(['/readyz', '/metrics', '/healthz', ADMIN_PATH])('on INTERNAL_PORT: %s', async (path) => {
    misdirected(
      await request(internal).get(path).set('Host', `${REBOUND}:9464`).set('Authorization', auth),
      path,
    );
  });

  it.each([ADMIN_PATH, '/admin/deliveries', '/admin/api/deliveries', '/ADMIN/queues', '/admin'])(
    'on PORT: %s',
    async (path) => {
      misdirected(
        await request(shared.listener)
          .get(path)
          .set('Host', `${REBOUND}:3000`)
          .set('Authorization', auth),
        path,
      );
    },
  );

  it('a POST from the rebound page, its Origin matching its Host, changes nothing', async () => {
    for (const app of [internal, shared.listener])
      misdirected(
        await request(app)
          .post('/admin/api/destinations/anything/resume')
          .set('Host', `${REBOUND}:9464`)
          .set('Origin', `http://${REBOUND}:9464`)
          .set('Authorization', auth),
        '/admin/api',
      );
  });

  it('PORT outside /admin, where the provider and the load balancer come by any name, is not asked', async () => {
    await request(shared.listener).get('/healthz').set('Host', REBOUND).expect(200);
    await request(shared.listener).get('/metrics').set('Host', REBOUND).expect(200);
  });
});

describe('the names that are allowed', () => {
  it.each([
    '127.0.0.1:9464',
    '[::1]:9464',
    '10.1.2.3',
    'localhost:9464',
    'Board.Example.COM:9464',
    'board.example.com.',
  ])('Host: %s', async (host) => {
    await request(internal).get('/readyz').set('Host', host).expect(200);
    const board = await request(internal)
      .get(ADMIN_PATH)
      .set('Host', host)
      .set('Authorization', auth);
    expect(board.status).toBe(200);
  });

  it('a change is accepted from a page under an allowed name, and refused with an Origin of another', async () => {
    const post = (origin: string) =>
      request(internal)
        .post('/admin/api/destinations/absent-destination/resume')
        .set('Host', 'board.example.com:9464')
        .set('Origin', origin)
        .set('Authorization', auth);
    expect((await post('http://board.example.com:9464')).status).not.toBe(403);
    expect((await post(`http://${REBOUND}:9464`)).status).toBe(403);
  });
});

describe('Cache-Control: no-store on every /admin/* answer', () => {
  it.each([
    ['the board', ADMIN_PATH, auth, 200],
    ['the inspector page', '/admin/deliveries', auth, 200],
    ['the inspector API', '/admin/api/deliveries', auth, 200],
    ['an unknown delivery', '/admin/api/deliveries/audio.ready/absent', auth, 404],
    ['an unknown path', '/admin/nothing-here', auth, 404],
    ['no credentials', '/admin/api/deliveries', undefined, 401],
  ])('%s', async (_name, path, authorization, status) => {
    for (const app of [internal, shared.listener]) {
      const req = request(app).get(path).set('Host', '127.0.0.1');
      const res = await (authorization === undefined
        ? req
        : req.set('Authorization', authorization));
      expect(res.status).toBe(status);
      expect(res.headers['cache-control']).toBe('no-store');
    }
  });

  it('and on what bull-board serves itself (its scripts)', async () => {
    const page = await request(internal)
      .get(ADMIN_PATH)
      .set('Host', '127.0.0.1')
      .set('Authorization', auth);
    const script = /<script[^>]*src="(static\/[^"]+\.js)"/.exec(page.text)?.[1];
    expect(script).toBeDefined();
    const res = await request(internal)
      .get(`${ADMIN_PATH}/${script ?? ''}`)
      .set('Host', '127.0.0.1')
      .set('Authorization', auth);
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
  });
});
