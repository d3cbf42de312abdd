import { createHmac, createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { createForwardSigner, publicKeyOf } from '../../src/forwarding/senders/forward-signer';

/**
 * A `whsk_` key made the way docs/forwarding.md makes one (node:crypto's own Ed25519 pair, the
 * seed taken from its JWK), so that the signer's PKCS#8 import is checked against another path.
 */
function keyPair(): { signingKey: string; publicKey: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const d = privateKey.export({ format: 'jwk' }).d ?? '';
  const x = publicKey.export({ format: 'jwk' }).x ?? '';
  return {
    signingKey: `whsk_${Buffer.from(d, 'base64url').toString('base64')}`,
    publicKey: `whpk_${Buffer.from(x, 'base64url').toString('base64')}`,
  };
}

/** Verifies one `v1a` entry with a `whpk_` key alone, as a consumer does. */
function verifiesV1a(publicKey: string, entry: string, signed: string): boolean {
  const raw = Buffer.from(publicKey.slice('whpk_'.length), 'base64');
  const key = createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') },
    format: 'jwk',
  });
  return verify(null, Buffer.from(signed), key, Buffer.from(entry.slice('v1a,'.length), 'base64'));
}

const id = 'audio.ready:tts_1';
const at = new Date('2026-11-28T03:00:00Z');
const body = '{"type":"audio.ready","id":"tts_1"}';
const signed = `${id}.${Math.floor(at.getTime() / 1000)}.${body}`;

it('the public key of a whsk_ key is the whpk_ of its Ed25519 pair', () => {
  const pair = keyPair();
  expect(publicKeyOf(pair.signingKey)).toBe(pair.publicKey);
  expect(pair.publicKey).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/);
});

it('a signing key alone: one v1a entry that verifies under the public key, and not over another body', () => {
  const pair = keyPair();
  const header = createForwardSigner({ secret: undefined, signingKeys: [pair.signingKey] })(
    id,
    at,
    body,
  );
  expect(header).toMatch(/^v1a,[A-Za-z0-9+/]{86}==$/);
  expect(verifiesV1a(pair.publicKey, header, signed)).toBe(true);
  expect(verifiesV1a(pair.publicKey, header, `${signed} `)).toBe(false);
  expect(verifiesV1a(keyPair().publicKey, header, signed)).toBe(false);
});

it('both keys: a v1 entry the standardwebhooks library verifies and a v1a entry, space-separated; several signing keys sign each', () => {
  const secret = `whsec_${Buffer.alloc(24, 3).toString('base64')}`;
  const [old, next] = [keyPair(), keyPair()];
  const header = createForwardSigner({ secret, signingKeys: [old.signingKey, next.signingKey] })(
    id,
    at,
    body,
  );
  const [v1, ...v1a] = header.split(' ');
  const hmac = createHmac('sha256', Buffer.from(secret.slice(6), 'base64')).update(signed);
  expect(v1).toBe(`v1,${hmac.digest('base64')}`);
  expect(v1a).toHaveLength(2);
  expect(verifiesV1a(old.publicKey, v1a[0] ?? '', signed)).toBe(true);
  expect(verifiesV1a(next.publicKey, v1a[1] ?? '', signed)).toBe(true);
  // The library checks the v1 entry and passes over the v1a ones it does not know.
  const headers = {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
    'webhook-signature': '',
  };
  const now = new Date(Number(headers['webhook-timestamp']) * 1000);
  headers['webhook-signature'] = createForwardSigner({ secret, signingKeys: [old.signingKey] })(
    id,
    now,
    body,
  );
  expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
});
