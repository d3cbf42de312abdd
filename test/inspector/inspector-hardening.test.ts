import request from 'supertest';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { eventually } from '../../src/util/eventually';
import { startInspectorBed, type InspectorBed } from '../helpers/inspector-bed';

/**
 * The inspector under a reviewer's hand: a client's mistakes are 4xx with a detail, the page's
 * status box says only what the server wrote, filters never match what an object inherits, and
 * a refused change names the header it lacks. A real pipeline on the test Redis.
 */
const PASSWORD = 'inspector hardening password';
const auth = `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}`;

let bed: InspectorBed;
let base: string;

beforeAll(async () => {
  bed = await startInspectorBed(PASSWORD);
  base = `http://127.0.0.1:${bed.server.port}`;
  // One delivery kept, so that a filter that matches everything would list something.
  const id = `hardening-${Date.now()}`;
  await bed.pipeline.post(sampleDelivery('key.revoked', { id })).expect(202);
  await bed.pipeline.settled(id);
});
afterAll(async () => {
  await bed.close();
});

const get = (path: string) => request(base).get(path).set('Authorization', auth);
const pausePath = () =>
  `/admin/deliveries/destinations/${encodeURIComponent(bed.destination)}/pause`;
const post = (path: string) =>
  request(base).post(path).set('Authorization', auth).set('Origin', base);

describe("a client's mistake is a 4xx with a detail, never a 500", () => {
  it('a malformed percent-encoding in the path: 400, on the page and the API', async () => {
    for (const path of [
      '/admin/deliveries/key.revoked/%ZZ',
      '/admin/api/deliveries/key.revoked/%ZZ',
      '/admin/api/deliveries/key.revoked/%E0%A4%A/audio',
    ]) {
      const res = await get(path);
      expect({ path, status: res.status }).toEqual({ path, status: 400 });
      expect(res.body).toEqual({ detail: expect.stringMatching(/percent-encoding/) });
    }
    const action = await post('/admin/api/deliveries/key.revoked/%ZZ/retry');
    expect(action.status).toBe(400);
  });

  it('a form over its size limit: 413', async () => {
    const res = await post(pausePath())
      .type('form')
      .send(`back=${'a'.repeat(8_000)}`);
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ detail: expect.stringMatching(/larger than/) });
  });

  it('a charset the form parser cannot read: 415', async () => {
    const res = await post(pausePath())
      .set('Content-Type', 'application/x-www-form-urlencoded; charset=koi8-r')
      .send('back=%2Fadmin%2Fdeliveries');
    expect(res.status).toBe(415);
    expect(res.body).toEqual({ detail: expect.stringMatching(/charset "koi8-r".*UTF-8/) });
    expect(await bed.destinationState()).toBe('active');
  });
});

describe("the page's status box says only what the server wrote", () => {
  const planted = 'Session expired. Re-enter your password at https://evil.example';

  it('text in the address is never shown; an unknown code shows nothing', async () => {
    const query = new URLSearchParams({ problem: planted, done: planted, notice: planted });
    for (const path of [
      `/admin/deliveries?${query.toString()}`,
      '/admin/deliveries?notice=constructor',
    ]) {
      const res = await get(path);
      expect(res.status).toBe(200);
      expect(res.text).not.toContain('evil.example');
      expect(res.text).not.toContain('role="status"');
    }
  });

  it("a known code shows the server's own text", async () => {
    const res = await get('/admin/deliveries?notice=paused');
    expect(res.text).toMatch(/role="status">\s*The destination is now paused/);
  });
});

it('?destination= a name every object inherits lists nothing, on the API and the page', async () => {
  const all = await get('/admin/api/deliveries');
  expect((all.body as { deliveries: unknown[] }).deliveries.length).toBeGreaterThan(0);
  for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf']) {
    const res = await get(`/admin/api/deliveries?destination=${name}`);
    expect({ name, deliveries: (res.body as { deliveries: unknown[] }).deliveries }).toEqual({
      name,
      deliveries: [],
    });
    const page = await get(`/admin/deliveries?destination=${name}`);
    expect(page.text).toContain('No delivery matches.');
  }
});

it('a change without an Origin header, or with another, is 403 naming the Origin header', async () => {
  const path = `/admin/api/destinations/${encodeURIComponent(bed.destination)}/pause`;
  const without = await request(base).post(path).set('Authorization', auth);
  const other = await request(base)
    .post(path)
    .set('Authorization', auth)
    .set('Origin', 'https://elsewhere.example');
  for (const res of [without, other]) {
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ detail: expect.stringMatching(/\bOrigin header\b/) });
  }
  await eventually(async () => ((await bed.destinationState()) === 'active' ? true : undefined));
});
