import express, { Router, type Request, type Response } from 'express';
import { BadRequestError, HttpError } from '../http-server/http-errors.js';
import { INSPECTOR_PAGE, parseListQuery } from './api-routes.js';
import type { ActionResult, Inspector } from './inspector.js';
import { confirmPage, deliveryPath } from './page-frame.js';
import { detailPage, listPage } from './page-views.js';
import { noticeOf } from './notices.js';

/** What each action does, in the words its confirmation shows before it is done. */
const EXPLAIN = {
  retry: (jobId: string) =>
    `Its failed job ${jobId} goes back on the queue with fresh attempts: the handler runs again (audio not yet stored is downloaded), hooks run again, and once handled its message is forwarded to every destination that wants it.`,
  replay: () =>
    "It is queued again from the archive as a new job, as `audio-webhooks replay --id` does: its handling runs as for a new delivery (audio stored already is kept, missing audio is downloaded, hooks run again) and its message is forwarded again with the same id. The provider's deduplication is not touched.",
  pause: (name: string) =>
    `Every worker holds the messages for ${name} (no attempts counted) until it is resumed; a message held longer than FORWARD_HOLD_SECONDS fails and is listed by \`failures\`. The other destinations are not affected.`,
  resume: (name: string) =>
    `Every worker sends to ${name} again; the messages held for it are sent, in batches.`,
} as const;

/** Where to go after an action: one of the inspector's own pages, never elsewhere. */
function backTo(req: Request, fallback: string): string {
  const asked = (req.body as { back?: unknown } | undefined)?.back ?? req.query.back;
  return typeof asked === 'string' && asked.startsWith(INSPECTOR_PAGE) && !asked.includes('//')
    ? asked
    : fallback;
}

/** Back to the page, with the code of what its status box is to say (notices.ts). */
function afterAction(res: Response, back: string, result: ActionResult): void {
  const separator = back.includes('?') ? '&' : '?';
  res.redirect(303, `${back}${separator}notice=${result.notice}`);
}

/** The status box's text: one the server wrote, named by its code; never the address's text. */
const shown = (req: Request) => noticeOf(req.query.notice);

const sendPage = (res: Response, text: string, status = 200) => {
  res.status(status).type('html').send(text);
};

/**
 * The inspector's pages, server-rendered from the same model the API answers from: no script,
 * nothing from another origin. Actions are forms: a GET shows what the action will do, its POST
 * does it (behind the dashboard's read-only and Origin checks) and sends the browser back.
 */
export function inspectorPages(
  inspector: Inspector,
  { readOnly, events }: { readonly readOnly: boolean; readonly events: readonly string[] },
): Router {
  const router = Router();
  const form = express.urlencoded({ extended: false, limit: '4kb' });
  const refuseReadOnly = () => {
    if (readOnly) throw new HttpError(403, 'the dashboard is read-only (ADMIN_READ_ONLY=true)');
  };

  router.get(INSPECTOR_PAGE, async (req, res) => {
    const destinations = await inspector.destinations();
    let query;
    try {
      query = parseListQuery(req.query);
    } catch (error: unknown) {
      if (!(error instanceof BadRequestError)) throw error;
      const view = { query: {}, deliveries: [], next: null, events, destinations, readOnly };
      sendPage(res, listPage({ ...view, notice: { kind: 'problem', text: error.detail } }), 400);
      return;
    }
    const { timelines, next } = await inspector.search(query);
    const deliveries = timelines.map((timeline) => timeline.summary);
    sendPage(
      res,
      listPage({ query, deliveries, next, events, destinations, readOnly, notice: shown(req) }),
    );
  });

  router.get(`${INSPECTOR_PAGE}/destinations/:name/:action`, (req, res) => {
    const { name, action } = req.params;
    if (action !== 'pause' && action !== 'resume') throw new HttpError(404, 'not found');
    refuseReadOnly();
    const back = backTo(req, INSPECTOR_PAGE);
    const title = `${action === 'pause' ? 'Pause' : 'Resume'} destination ${name}?`;
    sendPage(res, confirmPage(title, EXPLAIN[action](name), req.path, back, action === 'pause'));
  });
  router.post(`${INSPECTOR_PAGE}/destinations/:name/:action`, form, async (req, res) => {
    const { name, action } = req.params;
    if (action !== 'pause' && action !== 'resume') throw new HttpError(404, 'not found');
    afterAction(
      res,
      backTo(req, INSPECTOR_PAGE),
      await inspector.setPaused(name, action === 'pause'),
    );
  });

  router.get(`${INSPECTOR_PAGE}/:event/:id`, async (req, res) => {
    const found = await inspector.detail(req.params.event, req.params.id);
    if (found === undefined) throw new HttpError(404, 'no delivery of that event and id is kept');
    sendPage(res, detailPage(found, readOnly, shown(req)));
  });
  router.get(`${INSPECTOR_PAGE}/:event/:id/:action`, async (req, res) => {
    const { event, id, action } = req.params;
    if (action !== 'retry' && action !== 'replay') throw new HttpError(404, 'not found');
    refuseReadOnly();
    const found = await inspector.detail(event, id);
    if (found === undefined) throw new HttpError(404, 'no delivery of that event and id is kept');
    const self = deliveryPath(event, id);
    const title = `${action === 'retry' ? 'Retry' : 'Replay'} ${event} ${id}?`;
    sendPage(
      res,
      confirmPage(title, EXPLAIN[action](found.jobId ?? ''), `${self}/${action}`, self, false),
    );
  });
  router.post(`${INSPECTOR_PAGE}/:event/:id/:action`, form, async (req, res) => {
    const { event, id, action } = req.params;
    if (action !== 'retry' && action !== 'replay') throw new HttpError(404, 'not found');
    const result = await (action === 'retry'
      ? inspector.retry(event, id)
      : inspector.replay(event, id));
    afterAction(res, deliveryPath(event, id), result);
  });
  return router;
}
