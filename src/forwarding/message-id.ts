import { createHash } from 'node:crypto';

/** Printable ASCII, `!` to `~`: what an HTTP header, a NATS header and AMQP's shortstr all carry. */
const PRINTABLE = /^[!-~]+$/;
/** Under AMQP's 255-byte `message-id` with room to spare; JetStream and HTTP take far more. */
const MAX_BYTES = 200;

/**
 * The id every destination carries for one item (webhook-id, Nats-Msg-Id, AMQP message-id), for
 * consumers to dedupe on: `<event>:<data.id>` when every carrier can hold it as it is, else
 * `<event>:sha256:<hex of data.id's UTF-8>`. The receiver accepts any well-formed Unicode id of
 * any length; a raw `tts_日本語` failed every HTTP attempt, a newline HTTP and NATS, 250 characters
 * AMQP. The body's `id` always holds data.id as sent. The same for every run of one item (a
 * retry, a replay), so a JetStream stream or a consumer's table drops the repeats.
 */
export function messageId(event: string, id: string): string {
  const plain = `${event}:${id}`;
  if (PRINTABLE.test(plain) && plain.length <= MAX_BYTES) return plain;
  return `${event}:sha256:${createHash('sha256').update(id, 'utf8').digest('hex')}`;
}
