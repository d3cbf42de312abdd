import { describeError } from '../../src/util/describe-error';

it('a reason: the message, and the code that tells the kind of trouble, once', () => {
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), {
    code: 'ECONNREFUSED',
  });
  expect(describeError(refused)).toBe('connect ECONNREFUSED 127.0.0.1:9');
  const wrapped = new Error('fetch failed', {
    cause: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }),
  });
  expect(describeError(wrapped)).toBe('fetch failed (UND_ERR_SOCKET)');
  const denied = Object.assign(new Error('Access Denied'), { name: 'AccessDenied' });
  expect(describeError(denied)).toBe('Access Denied (AccessDenied)');
  expect(describeError(new TypeError('x is not a function'))).toBe('x is not a function');
  expect(describeError('plain')).toBe('plain');
});
