import type { IncomingMessage, OutgoingHttpHeaders, Server, ServerResponse } from 'node:http';

/**
 * What the receiver and the worker's health server share about a request in flight: its id, the
 * fields its one log line gets, and the JSON answer; and, for the receiver's route, whether the
 * client still waits for `100 Continue` (deferContinue, below). Kept on the response itself:
 * plain Node responses have no `res.locals`. The request log (receiver/common-middleware.ts)
 * starts it.
 */
const STATE = Symbol('request');
export interface RequestState {
  /** This request's id (the load balancer's X-Request-Id when sane, else a new UUID). */
  readonly id: string;
  /** Facts a route adds to the request's log line (addLogFields). */
  fields?: Record<string, unknown>;
}
type Tracked = ServerResponse & { [STATE]?: RequestState };

/** Starts a request's state under `id`; the request log reads its fields when it ends. */
export function trackRequest(res: ServerResponse, id: string): RequestState {
  const state: RequestState = { id };
  (res as Tracked)[STATE] = state;
  return state;
}

/** Fields a route wants on the request's one log line. */
export function addLogFields(res: ServerResponse, fields: Record<string, unknown>): void {
  const state = (res as Tracked)[STATE];
  if (state !== undefined) state.fields = { ...state.fields, ...fields };
}

/** The id the request log gave this request. */
export function requestIdOf(res: ServerResponse): string | undefined {
  return (res as Tracked)[STATE]?.id;
}

/** Answers JSON exactly as Express's res.json does (same Content-Type, a Content-Length). */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: string,
  headers: OutgoingHttpHeaders = {},
): void {
  res.writeHead(status, {
    ...headers,
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}

/** Requests that sent `Expect: 100-continue` and have not been invited to send their body yet. */
const awaitingInvitation = new WeakSet<IncomingMessage>();

/**
 * Node answers `Expect: 100-continue` with `100 Continue` before any handler runs, inviting an
 * upload the route may refuse (a Content-Length over MAX_BODY_BYTES, a wrong Content-Type).
 * With this, the invitation is left to the route: inviteBody() sends it once the headers passed.
 */
export function deferContinue(server: Server): void {
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    awaitingInvitation.add(req);
    server.emit('request', req, res);
  });
}

/** Sends `100 Continue` if the client is waiting for it (and only once). */
export function inviteBody(req: IncomingMessage, res: ServerResponse): void {
  if (awaitingInvitation.delete(req)) res.writeContinue();
}
