import { Writable } from 'node:stream';
import { createLogger } from '../../src/telemetry/logger';
import {
  classifyEnqueueError,
  EnqueueUnavailableError,
  UnqueueableDeliveryError,
} from '../../src/receiver/enqueue-errors';
import { NilExecError } from '../../src/redis/replica-wait';
import { connectionLog, isConnectionError } from '../../src/redis/watch-redis';

describe('classifyEnqueueError', () => {
  it('a stack overflow in serialisation is a body that can never be stored', () => {
    expect(classifyEnqueueError(new RangeError('Maximum call stack size exceeded'))).toBeInstanceOf(
      UnqueueableDeliveryError,
    );
  });

  it.each([
    Object.assign(new Error("OOM command not allowed when used memory > 'maxmemory'."), {
      name: 'ReplyError',
    }),
    new Error('Command timed out'),
    new Error("Stream isn't writeable and enableOfflineQueue options is false"),
    new Error('Connection is closed.'),
    Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' }),
    new NilExecError(),
  ])('Redis trouble is temporary: %s', (error) => {
    expect(classifyEnqueueError(error)).toBeInstanceOf(EnqueueUnavailableError);
  });

  it('anything else is ours, passed on as it is', () => {
    const bug = new TypeError("Cannot read properties of undefined (reading 'id')");
    expect(classifyEnqueueError(bug)).toBe(bug);
  });
});

describe('connectionLog', () => {
  it('one line per change of state, however many errors come in between', () => {
    const lines: { msg: string }[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()) as { msg: string });
        done();
      },
    });
    const log = connectionLog(createLogger('info', sink), 'worker', 'redis://127.0.0.1:6379');
    log.up();
    for (let i = 0; i < 10; i++) log.down(new Error('connect ECONNREFUSED'));
    expect(log.isDown).toBe(true);
    log.up();
    log.up();
    expect(lines.map((l) => l.msg)).toEqual([
      'Redis connected',
      'Redis unavailable; retrying',
      'Redis available again',
    ]);
  });

  it('recognises connection errors by code and by message', () => {
    expect(isConnectionError(Object.assign(new Error('x'), { code: 'ECONNRESET' }))).toBe(true);
    expect(isConnectionError(new Error('Connection is closed.'))).toBe(true);
    expect(isConnectionError(new Error('Missing lock for job 1'))).toBe(false);
    expect(isConnectionError('ECONNREFUSED')).toBe(false);
  });
});
