import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import getRawBody from 'raw-body';
import type { ReceiverSettings } from '../config/receiver-settings.js';
import type { DeliveryOutcome, Metrics } from '../telemetry/metrics.js';
import type { QueueDelivery } from './enqueue-delivery.js';
import { EnqueueUnavailableError, UnqueueableDeliveryError } from './enqueue-errors.js';
import type { CustomEvents } from '../hooks/custom-events.js';
import { parseEvent } from '../provider-spec/parse-event.js';
import { inServerSpan, inSpanSync } from '../telemetry/tracing.js';
import {
  formatTraceparent,
  parseTraceparent,
  type TraceContext,
} from '../telemetry/trace-context.js';
import { verifySignature } from '../provider-spec/signature.js';
import { addLogFields, inviteBody, sendJson } from '../http-server/request-state.js';
import { answerError } from '../http-server/error-handler.js';
import {
  BadRequestError,
  HttpError,
  ServiceUnavailableError,
  SignatureError,
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
} from '../http-server/http-errors.js';

export interface WebhookRouteDeps {
  readonly config: Pick<
    ReceiverSettings,
    'webhookPath' | 'maxBodyBytes' | 'webhookSecrets' | 'signatureToleranceSeconds'
  >;
  /** Queues a parsed delivery in Redis within its deadline (receiver/enqueue-delivery.ts). */
  readonly queueDelivery: QueueDelivery;
  /** The fork's own events (src/custom/events.ts), received like built-in ones. */
  readonly customEvents: CustomEvents;
  readonly metrics: Metrics;
  readonly logger: Logger;
}

/** Seconds a sender should wait before trying again after a 503. */
export const RETRY_AFTER_SECONDS = 5;

const OUTCOME_BY_STATUS: Readonly<Record<number, DeliveryOutcome>> = {
  400: 'bad_request',
  401: 'unauthorized',
  413: 'too_large',
  415: 'unsupported_media_type',
  503: 'unavailable',
};

/** A route as plain Node sees it: no Express request or response needed. */
export type PlainHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/** The answers, serialised once. */
const ANSWER = {
  accepted: JSON.stringify({ received: true, duplicate: false }),
  duplicate: JSON.stringify({ received: true, duplicate: true }),
  ignored: JSON.stringify({ received: true, ignored: true }),
};

/**
 * POST {WEBHOOK_PATH}: raw body → signature → parse → dedupe + enqueue → answer. The answer is
 * sent only once the delivery is in Redis, so a 2xx always means "stored". A plain Node handler
 * that answers its own errors and never rejects: the receiver calls it before Express for the
 * exact path (receiver/receiver.ts), and Express routes the path's other spellings to it.
 */
export function webhookRoute(deps: WebhookRouteDeps): PlainHandler {
  const attributes = { 'http.request.method': 'POST', 'url.path': deps.config.webhookPath };
  return (req, res) =>
    inServerSpan(
      `POST ${deps.config.webhookPath}`,
      attributes,
      incomingTrace(req),
      async (span, trace) => {
        try {
          await receive(deps, req, res, trace);
          span?.setAttribute('http.response.status_code', res.statusCode);
        } catch (error: unknown) {
          const status = error instanceof HttpError ? error.status : 500;
          span?.setAttribute('http.response.status_code', status);
          deps.metrics.deliveries.inc({ outcome: OUTCOME_BY_STATUS[status] ?? 'error', event: '' });
          answerError(res, error, deps.logger);
        }
      },
    );
}

/**
 * The provider's trace, when its request carried a valid `traceparent`: the delivery's forwards
 * continue it. The header is not covered by the signature; it chooses only which trace ids the
 * delivery's spans and forwards carry, never whether anything is accepted or forwarded.
 */
const incomingTrace = (req: IncomingMessage) => parseTraceparent(req.headers.traceparent);

async function receive(
  deps: WebhookRouteDeps,
  req: IncomingMessage,
  res: ServerResponse,
  trace: TraceContext,
): Promise<void> {
  const { config, metrics } = deps;
  const body = await readRawBody(req, res, config.maxBodyBytes);
  const now = Date.now() / 1000;
  const verified = inSpanSync('webhook.verify_signature', {}, () =>
    verifySignature({
      header: req.headers['x-service-signature'] as string | undefined,
      body,
      secrets: config.webhookSecrets,
      toleranceSeconds: config.signatureToleranceSeconds,
      now: Math.floor(now),
    }),
  );
  if (!verified.ok) {
    metrics.signatureFailures.inc({ reason: verified.reason });
    throw new SignatureError(verified.reason, verified.detail);
  }
  metrics.signatureMatches.inc({ secret: String(verified.secretIndex) });
  metrics.clockSkewSeconds.observe(now - verified.timestamp);

  const parsed = parseEvent(body, deps.customEvents);
  if (!parsed.ok) throw new BadRequestError(parsed.detail);
  if (!parsed.known) {
    // Acknowledged so the sender stops retrying an event we will never handle; counted and
    // logged so a new provider event is noticed.
    deps.logger.warn({ event: parsed.event, id: parsed.id }, 'ignored unknown event');
    metrics.deliveries.inc({ outcome: 'ignored', event: '' });
    sendJson(res, 200, ANSWER.ignored);
    return;
  }

  const { event } = parsed;
  const stopTimer = metrics.enqueueSeconds.startTimer();
  const result = await deps
    .queueDelivery(event, parsed.text, verified.secretIndex, formatTraceparent(trace))
    .catch((error: unknown) => {
      // A Redis that stalls or fails must show in the histogram, not only the ones that answered.
      stopTimer({ result: 'failed' });
      if (error instanceof EnqueueUnavailableError) {
        throw new ServiceUnavailableError(
          'could not store the delivery; retry later',
          RETRY_AFTER_SECONDS,
          error,
        );
      }
      if (error instanceof UnqueueableDeliveryError) throw new BadRequestError(error.message);
      throw error;
    });
  stopTimer({ result: 'stored' });
  metrics.deliveries.inc({
    outcome: result.duplicate ? 'duplicate' : 'accepted',
    event: event.event,
  });
  addLogFields(res, {
    event: event.event,
    id: event.data.id,
    jobId: result.jobId,
    duplicate: result.duplicate,
  });
  if (result.duplicate) sendJson(res, 200, ANSWER.duplicate);
  else sendJson(res, 202, ANSWER.accepted);
}

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
