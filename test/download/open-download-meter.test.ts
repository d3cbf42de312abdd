import { createHash } from 'node:crypto';
import { PermanentDownloadError } from '../../src/download/download-errors';
import { Meter } from '../../src/download/open-download';

async function* chunks(...parts: string[]): AsyncGenerator<Uint8Array> {
  for (const part of parts) yield Buffer.from(part);
  await Promise.resolve();
}

async function drain(source: AsyncIterable<Uint8Array>): Promise<string> {
  let text = '';
  for await (const chunk of source) text += Buffer.from(chunk).toString();
  return text;
}

describe('Meter', () => {
  it('passes every byte through, counting and hashing them', async () => {
    const meter = new Meter(100);
    expect(await drain(meter.measure(chunks('ab', 'cd', 'e')))).toBe('abcde');
    expect(meter.bytes).toBe(5);
    expect(meter.sha256()).toBe(createHash('sha256').update('abcde').digest('hex'));
  });

  it('takes exactly the cap', async () => {
    const meter = new Meter(4);
    await drain(meter.measure(chunks('ab', 'cd')));
    expect(meter.bytes).toBe(4);
  });

  it('stops the transfer at the first chunk past the cap, without passing it on', async () => {
    const meter = new Meter(4);
    const passed: string[] = [];
    const run = async () => {
      for await (const chunk of meter.measure(chunks('ab', 'cde', 'never'))) {
        passed.push(Buffer.from(chunk).toString());
      }
    };
    await expect(run()).rejects.toThrow(PermanentDownloadError);
    await expect(run()).rejects.toThrow(/over the 4 bytes limit \(DOWNLOAD_MAX_BYTES\)/);
    expect(passed).toEqual(['ab']);
  });
});
