import { createPrivateKey, createPublicKey, sign, type KeyObject } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/**
 * The `webhook-signature` header of an HTTP forward, as Standard Webhooks defines it: one entry
 * per key, space-separated. FORWARD_SECRET (`whsec_`) gives `v1,<base64 HMAC-SHA256>`, made by
 * the `standardwebhooks` reference library; each FORWARD_SIGNING_KEY (`whsk_`) gives
 * `v1a,<base64 Ed25519 signature>`, which a consumer verifies with the public key (`whpk_`)
 * alone. Both cover the same `<webhook-id>.<webhook-timestamp>.<body>`. The library signs only
 * `v1` (it has no `v1a`), so `v1a` is made here with node:crypto's Ed25519.
 */
export type ForwardSigner = (id: string, timestamp: Date, body: string) => string;

export interface ForwardKeys {
  /** FORWARD_SECRET: `whsec_<base64 key>`. */
  readonly secret: string | undefined;
  /** FORWARD_SIGNING_KEY: `whsk_<base64 of a 32-byte Ed25519 seed>` each (several while rotating). */
  readonly signingKeys: readonly string[];
}

const SECRET_KEY_PREFIX = 'whsk_';
const PUBLIC_KEY_PREFIX = 'whpk_';

/**
 * An Ed25519 private key from its 32-byte seed. Node imports raw Ed25519 keys only in a
 * container: PKCS#8 DER, whose encoding for Ed25519 (RFC 8410) is this fixed 16-byte prefix
 * (SEQUENCE, version 0, the algorithm id 1.3.101.112, an OCTET STRING holding an OCTET STRING
 * of 32 bytes) followed by the seed. A JWK would need the public key as well.
 */
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/** The private key a `whsk_` key holds (checked when the settings were read: config/). */
export function privateKeyOf(signingKey: string): KeyObject {
  const seed = Buffer.from(signingKey.slice(SECRET_KEY_PREFIX.length), 'base64');
  if (seed.length !== 32) throw new Error('FORWARD_SIGNING_KEY must hold a 32-byte seed');
  return createPrivateKey({
    key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]),
    format: 'der',
    type: 'pkcs8',
  });
}

/** The `whpk_<base64 of the 32-byte public key>` a consumer verifies with. */
export function publicKeyOf(signingKey: string): string {
  const jwk = createPublicKey(privateKeyOf(signingKey)).export({ format: 'jwk' });
  return `${PUBLIC_KEY_PREFIX}${Buffer.from(jwk.x ?? '', 'base64url').toString('base64')}`;
}

/** The signer of every HTTP forward; at least one key is set (config.ts refuses otherwise). */
export function createForwardSigner({ secret, signingKeys }: ForwardKeys): ForwardSigner {
  const hmac = secret === undefined ? undefined : new Webhook(secret);
  const keys = signingKeys.map(privateKeyOf);
  return (id, timestamp, body) => {
    const entries = hmac === undefined ? [] : [hmac.sign(id, timestamp, body)];
    if (keys.length > 0) {
      const signed = Buffer.from(`${id}.${Math.floor(timestamp.getTime() / 1000)}.${body}`);
      for (const key of keys) entries.push(`v1a,${sign(null, signed, key).toString('base64')}`);
    }
    return entries.join(' ');
  };
}
