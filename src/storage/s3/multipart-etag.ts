import { createHash } from 'node:crypto';

/**
 * The ETag a completed multipart upload gets: the MD5 of its parts' MD5s (each part's ETag),
 * then `-` and their count, as S3 and Ceph make it. Ceph RGW answers CompleteMultipartUpload
 * without one, and a HEAD made after it may already see another run's object; undefined when a
 * part's ETag is not an MD5 (AWS with SSE-KMS, which does send its own).
 */
export function multipartEtag(
  parts: readonly { readonly ETag: string | undefined }[],
): string | undefined {
  const md5s = parts.map((part) => part.ETag?.replace(/"/g, '') ?? '');
  if (md5s.length === 0 || md5s.some((md5) => !/^[0-9a-f]{32}$/i.test(md5))) return undefined;
  const hash = createHash('md5');
  for (const md5 of md5s) hash.update(Buffer.from(md5, 'hex'));
  return `"${hash.digest('hex')}-${md5s.length}"`;
}
