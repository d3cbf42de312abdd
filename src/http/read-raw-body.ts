import type { IncomingMessage } from 'node:http';
import getRawBody from 'raw-body';
import { BadRequestError, PayloadTooLargeError, UnsupportedMediaTypeError } from './http-errors.js';

/** `application/json`, parameters such as `charset=utf-8` allowed, case-insensitive. */
export function isJsonContentType(header: string | undefined): boolean {
  return header?.split(';', 1)[0]?.trim().toLowerCase() === 'application/json';
}

function errorType(error: unknown): unknown {
  return typeof error === 'object' && error !== null && 'type' in error ? error.type : undefined;
}

/**
 * Reads the exact bytes received, which the signature covers; no JSON parser has touched them.
 * A declared Content-Length over the limit is refused before a byte is read.
 */
export async function readRawBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  if (!isJsonContentType(req.headers['content-type'])) throw new UnsupportedMediaTypeError();
  try {
    return await getRawBody(req, { limit, length: req.headers['content-length'] ?? null });
  } catch (error: unknown) {
    if (errorType(error) === 'entity.too.large') throw new PayloadTooLargeError(limit);
    throw new BadRequestError('could not read the request body');
  }
}
