import type { IncomingMessage, ServerResponse } from 'node:http';
import getRawBody from 'raw-body';
import { inviteBody } from '../http-server/expect-continue.js';
import {
  BadRequestError,
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
} from '../http-server/http-errors.js';

/** `application/json`, parameters such as `charset=utf-8` allowed, case-insensitive. */
export function isJsonContentType(header: string | undefined): boolean {
  return header?.split(';', 1)[0]?.trim().toLowerCase() === 'application/json';
}

function errorType(error: unknown): unknown {
  return typeof error === 'object' && error !== null && 'type' in error ? error.type : undefined;
}

/**
 * Reads the exact bytes received, which the signature covers; no JSON parser has touched them.
 * Type and declared length are checked before a byte is read, and before a client that sent
 * `Expect: 100-continue` is invited to send its body.
 */
export async function readRawBody(
  req: IncomingMessage,
  res: ServerResponse,
  limit: number,
): Promise<Buffer> {
  if (!isJsonContentType(req.headers['content-type'])) throw new UnsupportedMediaTypeError();
  const length = req.headers['content-length'];
  if (length !== undefined && Number(length) > limit) throw new PayloadTooLargeError(limit);
  inviteBody(req, res);
  try {
    return await getRawBody(req, { limit, length: length ?? null });
  } catch (error: unknown) {
    if (errorType(error) === 'entity.too.large') throw new PayloadTooLargeError(limit);
    throw new BadRequestError('could not read the request body');
  }
}
