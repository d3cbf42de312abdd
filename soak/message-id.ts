import { createHash } from 'node:crypto';

/**
 * The message id every destination must carry for an item, as docs/forwarding.md defines it, written
 * again here rather than imported from src/forwarding/: the checker must not share the code it checks.
 * `<event>:<data.id>` when that is printable ASCII (`!` to `~`) of at most 200 bytes, else
 * `<event>:sha256:<64 hex digits of the SHA-256 of data.id's UTF-8>`.
 */
export function expectedMessageId(event: string, id: string): string {
  const plain = `${event}:${id}`;
  if (/^[!-~]+$/.test(plain) && Buffer.byteLength(plain) <= 200) return plain;
  return `${event}:sha256:${createHash('sha256').update(id, 'utf8').digest('hex')}`;
}
