import type { IncomingMessage, Server, ServerResponse } from 'node:http';

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
