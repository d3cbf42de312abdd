import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { generate } from 'selfsigned';

export interface CdnCertificate {
  readonly key: string;
  readonly cert: string;
  /** Where the certificate (its own CA) is written: what DOWNLOAD_CA_FILE points at. */
  readonly caPath: string;
}

/**
 * The CDN's self-signed certificate, made with selfsigned (not a shell-out to openssl) the first
 * time and kept in `dir`, so a receiver that trusts it keeps trusting it across sandbox restarts.
 * It is made again when the names it must cover change.
 */
export async function cdnCertificate(
  dir: string,
  hosts: readonly string[],
): Promise<CdnCertificate> {
  const names = [...new Set(['localhost', '127.0.0.1', '::1', ...hosts])].sort();
  const caPath = join(dir, 'ca.pem');
  const keyPath = join(dir, 'cdn-key.pem');
  const namesPath = join(dir, 'cdn-names.json');
  if (existsSync(caPath) && existsSync(keyPath) && existsSync(namesPath)) {
    const kept = JSON.parse(await readFile(namesPath, 'utf8')) as string[];
    if (JSON.stringify(kept) === JSON.stringify(names)) {
      return { key: await readFile(keyPath, 'utf8'), cert: await readFile(caPath, 'utf8'), caPath };
    }
  }
  const pems = await generate([{ name: 'commonName', value: 'audio-webhooks sandbox CDN' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notAfterDate: new Date(Date.now() + 365 * 24 * 3600 * 1000),
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', digitalSignature: true, keyCertSign: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: names.map((name) =>
          isIP(name) ? { type: 7, ip: name } : { type: 2, value: name },
        ),
      },
    ],
  });
  await mkdir(dir, { recursive: true });
  await writeFile(keyPath, pems.private, { mode: 0o600 });
  await writeFile(caPath, pems.cert);
  await writeFile(namesPath, JSON.stringify(names));
  return { key: pems.private, cert: pems.cert, caPath };
}
