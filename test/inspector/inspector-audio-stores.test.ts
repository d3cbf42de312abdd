import express from 'express';
import request from 'supertest';
import { errorHandler } from '../../src/http-server/error-handler';
import { sendStoredAudio } from '../../src/inspector/stored-audio';
import { createLogger } from '../../src/telemetry/logger';
import { STORE_KINDS, useStoreFixtures } from '../helpers/store-fixtures';

/**
 * The inspector's audio route streams from either store (a folder, a bucket on a private Ceph
 * gateway): the bytes as written, with their type, and a 404 with a detail for a name the store
 * does not hold. The whole route over a pipeline: inspector-api.test.ts.
 */
const fixtures = useStoreFixtures('inspector-audio');

describe.each(STORE_KINDS)('the %s store', (kind) => {
  it('streams a stored file whole, and answers 404 for one it does not hold', async () => {
    const store = await fixtures.stores[kind]();
    // Several chunks of either store's reads long.
    const bytes = Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(700_000, 3)]);
    await store.write('spoken.wav', [bytes], { id: 'spoken', contentType: 'audio/wav' });
    const app = express();
    app.get('/:key', async (req, res) => {
      const type = typeof req.query.type === 'string' ? req.query.type : 'audio/wav';
      const item = { key: req.params.key, bytes: bytes.length, content_type: type };
      await sendStoredAudio(res, store, item);
    });
    app.use(errorHandler(createLogger('silent')));

    const res = await request(app)
      .get('/spoken.wav')
      .buffer(true)
      .parse((answer, done) => {
        const chunks: Buffer[] = [];
        const stream = answer as unknown as NodeJS.ReadableStream;
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('end', () => {
          done(null, Buffer.concat(chunks));
        });
      });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('audio/wav');
    expect(Buffer.compare(res.body as Buffer, bytes)).toBe(0);

    // A type the CDN gave that is not audio is not served as such from the dashboard's origin.
    const html = await request(app).get('/spoken.wav?type=text/html');
    expect(html.headers['content-type']).toBe('application/octet-stream');
    expect(html.headers['content-security-policy']).toMatch(/^sandbox/);

    const missing = await request(app).get('/never-written.wav');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: expect.stringMatching(/no longer in the store/) });
  });
});
