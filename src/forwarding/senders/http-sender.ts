import { parseRetryAfter } from '../../download/parse-retry-after.js';
import { describeError } from '../../util/describe-error.js';
import { Agent, request } from 'undici';
import type { ForwardSigner } from './forward-signer.js';
import { ForwardError, type Sender } from './sender.js';

/**
 * A 429's or 503's Retry-After (seconds or an HTTP date), as Svix reads it (svix-webhooks
 * #2203): the destination's next attempt waits at least that long, at most MAX_RETRY_AFTER_MS.
 */
function asksToWait(status: number, header: string | string[] | undefined): number | undefined {
  if (status !== 429 && status !== 503) return undefined;
  const asked = parseRetryAfter(Array.isArray(header) ? header[0] : header);
  return asked === undefined ? undefined : Math.min(asked, MAX_RETRY_AFTER_MS);
}

/** The longest Retry-After a destination is granted: forwards are retried every 10 minutes at most. */
export const MAX_RETRY_AFTER_MS = 10 * 60 * 1000;

/** What a destination may answer and still be read: its body is only drained. */
const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * POSTs each message, signed as Standard Webhooks (webhook-id, webhook-timestamp,
 * webhook-signature: `v1` and/or `v1a` entries, forward-signer.ts), with its `traceparent`.
 * Any 2xx counts as taken; a redirect is not followed (the destination is configured, not
 * discovered). A user and password in the URL are sent as Basic auth, never as part of the URL.
 */
export function createHttpSender(url: URL, sign: ForwardSigner, timeoutMs: number): Sender {
  const target = new URL(url.href);
  const authorization =
    url.username === ''
      ? undefined
      : `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`;
  target.username = '';
  target.password = '';
  const agent = new Agent({
    connectTimeout: timeoutMs,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });
  return {
    async send({ id, body, traceparent }, signal) {
      const now = new Date();
      const answer = await request(target, {
        method: 'POST',
        dispatcher: agent,
        signal,
        headers: {
          'content-type': 'application/json',
          'webhook-id': id,
          'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
          'webhook-signature': sign(id, now, body),
          traceparent,
          ...(authorization === undefined ? {} : { authorization }),
        },
        body,
      }).catch((error: unknown) => {
        throw new ForwardError(`not reached: ${describeError(error)}`, { cause: error });
      });
      await answer.body.dump({ limit: MAX_ANSWER_BYTES }).catch(() => undefined);
      if (answer.statusCode < 200 || answer.statusCode > 299) {
        const retryAfterMs = asksToWait(answer.statusCode, answer.headers['retry-after']);
        throw new ForwardError(`answered ${answer.statusCode}`, {
          ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
        });
      }
    },
    close: () => agent.close(),
  };
}
