import { createHmac } from 'node:crypto';

/** HMAC-SHA256 over `<t>.<raw body>` (docs/provider.md, "The signature"), as raw bytes. */
export function computeSignature(secret: string, timestamp: string, body: Uint8Array): Buffer {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest();
}
