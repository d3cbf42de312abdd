import { createHash } from 'node:crypto';
import {
  decodeEntry,
  encodeEntry,
  ID_KEPT_BYTES,
  ENTRY_MAX_BYTES,
  entryField,
} from '../../src/history/entry-codec';

const AT = '2026-01-01T00:00:00.000Z';
const digest = (id: string) =>
  `sha256:${createHash('sha256').update(id, 'utf8').digest('base64url')}`;

/** A `data` of about `bytes` bytes, its numbers written short. */
function dataOf(id: string, bytes: number): string {
  const head = `{"id":${JSON.stringify(id)},"values":[`;
  const count = Math.max(1, Math.floor((bytes - head.length - 2) / 5));
  return `${head}${Array.from({ length: count }, () => '1e20').join(',')}]}`;
}

/** Encoded, then read back under its key, as the records do. */
function roundTrip(id: string, data: string, time = 'received_at') {
  return decodeEntry(encodeEntry(id, [time, AT], data), entryField(id), time);
}

describe('entryField', () => {
  it('is the id itself up to 64 bytes of JSON text', () => {
    expect(entryField('key_123')).toBe('key_123');
    expect(entryField('k'.repeat(ID_KEPT_BYTES))).toBe('k'.repeat(ID_KEPT_BYTES));
  });

  it('is a digest of a longer id: of a megabyte, of 64 characters that take more bytes', () => {
    const huge = `key_${'x'.repeat(1_000_000)}`;
    expect(entryField(huge)).toBe(digest(huge));
    expect(entryField(huge)).toHaveLength(50);
    expect(entryField('k'.repeat(ID_KEPT_BYTES + 1))).toBe(digest('k'.repeat(ID_KEPT_BYTES + 1)));
    expect(entryField('é'.repeat(40))).toBe(digest('é'.repeat(40)));
    expect(entryField('"'.repeat(40))).toBe(digest('"'.repeat(40)));
  });

  it("hashes an id that looks like a digest: no short id takes a long one's key", () => {
    const long = 'y'.repeat(500);
    expect(entryField(digest(long))).not.toBe(entryField(long));
    expect(entryField(digest(long))).toBe(digest(digest(long)));
  });
});

describe('encodeEntry', () => {
  it('keeps a short data as the provider wrote it: 1e20 stays 1e20, spaces and order kept', () => {
    const data = '{ "id": "job-1", "error": "voice unavailable", "n": 1e20 }';
    const text = encodeEntry('job-1', ['received_at', AT], data);
    // Its key is the id: the record does not repeat it.
    expect(text).toBe(`{"received_at":"${AT}","payload":${data}}`);
    expect(decodeEntry(text, 'job-1', 'received_at')).toEqual({
      id: 'job-1',
      received_at: AT,
      payload: { id: 'job-1', error: 'voice unavailable', n: 1e20 },
    });
  });

  it('omits a long data, with its length', () => {
    const data = dataOf('job-2', 1_500_000);
    const text = encodeEntry('job-2', ['received_at', AT], data);
    expect(text).toBe(`{"received_at":"${AT}","payload":null,"payload_bytes":${data.length}}`);
    expect(decodeEntry(text, 'job-2', 'received_at')).toEqual({
      id: 'job-2',
      received_at: AT,
      payload: null,
      payload_bytes: data.length,
      payload_truncated: true,
    });
  });

  it('keeps a data only when the whole record fits in ENTRY_MAX_BYTES, counted in bytes', () => {
    const fits = (data: string) =>
      !encodeEntry('j', ['received_at', AT], data).includes('"payload":null');
    const room = ENTRY_MAX_BYTES - `{"received_at":"${AT}","payload":}`.length;
    const ascii = (n: number) => `{"id":"j","t":"${'a'.repeat(n - 17)}"}`;
    expect(ascii(room)).toHaveLength(room);
    expect(fits(ascii(room))).toBe(true);
    expect(fits(ascii(room + 1))).toBe(false);
    // As many characters, two bytes each in UTF-8.
    expect(fits(`{"id":"j","t":"${'é'.repeat(room - 17)}"}`)).toBe(false);
  });

  it('keys a long id by its digest and keeps its first characters within 64 bytes', () => {
    const huge = `key_${'x'.repeat(1_000_000)}`;
    const data = `{"id":"${huge}"}`;
    expect(encodeEntry(huge, ['revoked_at', AT], data)).toBe(
      `{"id":"${huge.slice(0, ID_KEPT_BYTES)}","id_truncated":true,"revoked_at":"${AT}","payload":null,"payload_bytes":${data.length}}`,
    );
    expect(roundTrip(huge, data, 'revoked_at')).toEqual({
      id: huge.slice(0, ID_KEPT_BYTES),
      id_truncated: true,
      revoked_at: AT,
      payload: null,
      payload_bytes: data.length,
      payload_truncated: true,
    });
    // Whole characters only; escaped in JSON, a control character takes six bytes.
    expect(roundTrip('😀'.repeat(100), '{}').id).toBe('😀'.repeat(16));
    expect(roundTrip('\u0001'.repeat(20), '{}').id).toBe('\u0001'.repeat(10));
  });

  it('names an id that looks like a digest, whole', () => {
    const id = digest('anything');
    expect(roundTrip(id, `{"id":"${id}"}`)).toEqual({
      id,
      received_at: AT,
      payload: { id },
    });
  });

  it('is bounded whatever the id and the data', () => {
    for (const id of ['a', 'é'.repeat(64), '"'.repeat(5000), '\u0000'.repeat(5000)]) {
      for (const data of [`{"id":${JSON.stringify(id)}}`, dataOf(id, 100_000)]) {
        const text = encodeEntry(id, ['received_at', AT], data);
        expect(Buffer.byteLength(text)).toBeLessThanOrEqual(ENTRY_MAX_BYTES);
        expect(Buffer.byteLength(entryField(id))).toBeLessThanOrEqual(ID_KEPT_BYTES);
        expect(() => JSON.parse(text) as unknown).not.toThrow();
      }
    }
  });

  it('never splices in a text that is not a JSON object', () => {
    for (const data of ['[1,2]', '{"id":"x"', '"x"', 'null']) {
      expect(roundTrip('x', data)).toMatchObject({ payload: null, payload_truncated: true });
    }
  });
});

describe('decodeEntry', () => {
  it('reads a record of an earlier version: the whole id, the data re-serialised', () => {
    const old = JSON.stringify({
      id: 'key_123',
      revoked_at: AT,
      payload: { id: 'key_123', reason: 'leaked' },
    });
    expect(decodeEntry(old, 'key_123', 'revoked_at')).toEqual({
      id: 'key_123',
      revoked_at: AT,
      payload: { id: 'key_123', reason: 'leaked' },
    });
  });

  it('cuts the long id of an earlier record as a new record would', () => {
    const id = 'z'.repeat(5000);
    const old = JSON.stringify({ id, received_at: AT, payload: { id } });
    expect(decodeEntry(old, id, 'received_at')).toEqual({
      id: 'z'.repeat(ID_KEPT_BYTES),
      id_truncated: true,
      received_at: AT,
      payload: { id },
    });
  });

  it('refuses what is not a record', () => {
    expect(() => decodeEntry('[]', 'k', 'received_at')).toThrow(/not a record/);
    expect(() => decodeEntry('"x"', 'k', 'received_at')).toThrow(/not a record/);
  });
});
