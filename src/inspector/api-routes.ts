import { Router, type Request, type Response } from 'express';
import { BadRequestError, HttpError } from '../http-server/http-errors.js';
import { STATES } from '../history/delivery-timeline.js';
import {
  decodeCursor,
  type Cursor,
  type DeliveryState,
  type ListQuery,
} from './timeline-queries.js';
import type { ActionResult, Inspector } from './inspector.js';
import { sendStoredAudio, storedItemOf } from './stored-audio.js';

/** Where the page and the API live, beside the queue dashboard's /admin/queues. */
export const INSPECTOR_PAGE = '/admin/deliveries';
export const INSPECTOR_API = '/admin/api';

/** A list's size: `limit` at most, and when not given. */
export const LIST_LIMIT = { max: 200, default: 50 } as const;

const DELIVERY_STATES: readonly string[] = Object.values(STATES);

/** A query parameter given once, as text; undefined when absent or empty. */
function one(query: Request['query'], name: string): string | undefined {
  const value = query[name];
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string') throw new BadRequestError(`${name} may be given once`);
  return value;
}

/** A time as an ISO 8601 text (UTC when it names no zone) or milliseconds since the epoch. */
function time(query: Request['query'], name: string): number | undefined {
  const value = one(query, name);
  if (value === undefined) return undefined;
  // A time without a zone (the page's datetime-local fields) is UTC, whatever the server's zone.
  const zoneless = /^\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?$/.test(value);
  const ms = /^\d+$/.test(value) ? Number(value) : Date.parse(zoneless ? `${value}Z` : value);
  if (!Number.isFinite(ms))
    throw new BadRequestError(`${name} is not a time (ISO 8601, or ms since the epoch)`);
  return ms;
}

/**
 * `cursor`, a `next_cursor` of a page before. One that cannot be read is refused: a list that
 * started again from the top would show the first page as if it were the next.
 */
function cursor(query: Request['query']): Cursor | undefined {
  const value = one(query, 'cursor');
  if (value === undefined) return undefined;
  const decoded = decodeCursor(value);
  if (decoded === undefined)
    throw new BadRequestError(
      'cursor cannot be read: give the next_cursor of a page as it is, or none for the first page',
    );
  return decoded;
}

/** The list's filters, as the API and the page take them; a bad one → 400 naming it. */
export function parseListQuery(query: Request['query']): ListQuery & { readonly id?: string } {
  const state = one(query, 'state');
  if (state !== undefined && !DELIVERY_STATES.includes(state))
    throw new BadRequestError(`state is one of ${DELIVERY_STATES.join(', ')}`);
  const limitText = one(query, 'limit');
  const limit = limitText === undefined ? LIST_LIMIT.default : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > LIST_LIMIT.max)
    throw new BadRequestError(`limit is a whole number from 1 to ${LIST_LIMIT.max}`);
  const id = one(query, 'id');
  return {
    ...(id === undefined ? {} : { id }),
    event: one(query, 'event'),
    state: state as DeliveryState | undefined,
    destination: one(query, 'destination'),
    since: time(query, 'since'),
    until: time(query, 'until'),
    limit,
    cursor: cursor(query),
  };
}

/** An action's answer: 202 done, 409 not in a state for it, 404 nothing of that name. */
export function answerAction(res: Response, result: ActionResult): void {
  if (result.kind === 'done') {
    res.status(202).json({ done: result.message });
    return;
  }
  throw new HttpError(result.kind === 'unknown' ? 404 : 409, result.message);
}

/**
 * The inspector's JSON API (docs/operations.md, "Every route of the inspector"), under INSPECTOR_API. Mounted
 * behind the dashboard's guards (receiver/admin-dashboard.ts): Basic auth and its guessing limit,
 * and for a POST, ADMIN_READ_ONLY and the Origin check.
 */
export function inspectorApi(inspector: Inspector): Router {
  const router = Router();
  router.get(`${INSPECTOR_API}/deliveries`, async (req, res) => {
    const { timelines, next } = await inspector.search(parseListQuery(req.query));
    res.json({ deliveries: timelines.map((timeline) => timeline.summary), next_cursor: next });
  });
  router.get(`${INSPECTOR_API}/deliveries/:event/:id`, async (req, res) => {
    const found = await inspector.detail(req.params.event, req.params.id);
    if (found === undefined) throw new HttpError(404, 'no delivery of that event and id is kept');
    res.json(found.api);
  });
  router.get(`${INSPECTOR_API}/deliveries/:event/:id/audio`, async (req, res) => {
    const found = await inspector.detail(req.params.event, req.params.id);
    if (found === undefined) throw new HttpError(404, 'no delivery of that event and id is kept');
    const item = storedItemOf(found.api.stored);
    if (item === undefined) throw new HttpError(404, 'its handling stored no audio');
    const store = await inspector.store();
    if (store === undefined) throw new HttpError(404, 'the audio store cannot be read here');
    await sendStoredAudio(res, store, item);
  });
  router.post(`${INSPECTOR_API}/deliveries/:event/:id/retry`, async (req, res) => {
    answerAction(res, await inspector.retry(req.params.event, req.params.id));
  });
  router.post(`${INSPECTOR_API}/deliveries/:event/:id/replay`, async (req, res) => {
    answerAction(res, await inspector.replay(req.params.event, req.params.id));
  });
  router.post(`${INSPECTOR_API}/destinations/:name/pause`, async (req, res) => {
    answerAction(res, await inspector.setPaused(req.params.name, true));
  });
  router.post(`${INSPECTOR_API}/destinations/:name/resume`, async (req, res) => {
    answerAction(res, await inspector.setPaused(req.params.name, false));
  });
  return router;
}
