import { randomBytes } from 'node:crypto';
import { signPayload } from '../../provider-spec/signature.js';

/** What `POST /sandbox/events` may ask for; each applies to the first attempt only. */
export const FAULTS = [
  'wrong_secret',
  'stale_timestamp',
  'future_timestamp',
  'tampered_body',
  'duplicate',
  'rotated_secret',
] as const;
export type Fault = (typeof FAULTS)[number];

/** Far outside any tolerance the receiver accepts (its maximum is a day). */
const TWO_DAYS = 2 * 24 * 3600;

export interface SignedAttempt {
  readonly body: string;
  readonly signature: string;
  /** How many times to send it at once (the `duplicate` fault sends it twice). */
  readonly copies: number;
}

/**
 * One attempt's bytes and signature, signed afresh with the real time (a retry is never a replay
 * of an old signature), with the faults applied. The signing is the package's own signPayload:
 * the sandbox and the receiver share only this code.
 */
export function signAttempt(
  body: string,
  secrets: { readonly current: string; readonly rotated: string },
  faults: readonly Fault[],
  now = Date.now() / 1000,
): SignedAttempt {
  const has = (fault: Fault) => faults.includes(fault);
  const timestamp = has('stale_timestamp')
    ? now - TWO_DAYS
    : has('future_timestamp')
      ? now + TWO_DAYS
      : now;
  const secret = has('wrong_secret')
    ? `whsec_wrong_${randomBytes(8).toString('hex')}`
    : secrets.current;
  let signature = signPayload(body, secret, { timestamp });
  if (has('rotated_secret')) {
    const second = signPayload(body, secrets.rotated, { timestamp });
    signature += `,${second.slice(second.indexOf('v1='))}`;
  }
  // Still valid JSON, no longer the bytes that were signed.
  const sent = has('tampered_body') ? `${body.slice(0, -1)},"tampered":true}` : body;
  return { body: sent, signature, copies: has('duplicate') ? 2 : 1 };
}
