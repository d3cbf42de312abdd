import type { ForwardedMessage } from './observations.js';

/**
 * What the checker keeps of a forwarded message: its id as the carrier gave it and the body's
 * `type`, `id` and `stored.sha256` (bodies near MAX_BODY_BYTES are not kept whole). A body that is
 * not the JSON docs/forwarding.md describes is kept with an empty type, which matches no item.
 */
export function messageOf(messageId: string, body: string): ForwardedMessage {
  try {
    const parsed = JSON.parse(body) as {
      type?: unknown;
      id?: unknown;
      stored?: { sha256?: unknown };
    };
    const sha = parsed.stored?.sha256;
    return {
      messageId,
      type: typeof parsed.type === 'string' ? parsed.type : '',
      id: typeof parsed.id === 'string' ? parsed.id : '',
      ...(typeof sha === 'string' ? { storedSha256: sha } : {}),
    };
  } catch {
    return { messageId, type: '', id: `unparsable: ${body.slice(0, 80)}` };
  }
}
