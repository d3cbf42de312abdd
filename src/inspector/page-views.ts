import type { DestinationStatus } from '../forwarding/destination-control.js';
import type { RosterEntry } from '../forwarding/destination-roster.js';
import { html, isolated, verbatim, type Html } from './html.js';
import {
  age,
  audioPath,
  deliveryPath,
  destinationPath,
  forwardMarks,
  MARKS,
  page,
  PAGE,
  QUEUES,
  stateBadge,
  when,
} from './page-frame.js';
import type { DeliverySummary, ListQuery } from './timeline-queries.js';
import type { DetailView } from './inspector.js';
import { storedItemOf } from './stored-audio.js';

export interface ListView {
  readonly query: Partial<ListQuery> & { readonly id?: string };
  readonly deliveries: readonly DeliverySummary[];
  readonly next: string | null;
  readonly events: readonly string[];
  readonly destinations: readonly { entry: RosterEntry; status: DestinationStatus | undefined }[];
  readonly readOnly: boolean;
  readonly notice?: { readonly kind: 'done' | 'problem'; readonly text: string } | undefined;
}

/** A time as a datetime-local field shows it, in UTC (the field has no zone). */
const local = (ms: number | undefined) =>
  ms === undefined ? '' : new Date(ms).toISOString().slice(0, 16);

const option = (value: string, chosen: string | undefined, label = value) =>
  html`<option value="${value}" ${chosen === value ? html` selected` : ''}>${label}</option>`;

const notice = (n: ListView['notice']) =>
  n === undefined ? '' : html`<p class="note ${n.kind}" role="status">${n.text}</p>`;

/** The search form, the list newest first, and the destinations with their pause buttons. */
export function listPage(view: ListView): string {
  const q = view.query;
  const nextQuery = new URLSearchParams();
  for (const key of ['id', 'event', 'state', 'destination', 'since', 'until'] as const) {
    const value = q[key];
    if (value !== undefined) nextQuery.set(key, String(value));
  }
  if (view.next !== null) nextQuery.set('cursor', view.next);
  const rows = view.deliveries.map(
    (d) =>
      html`<tr>
        <td>${stateBadge(d.state)}</td>
        <td>${d.event}</td>
        <td class="id"><a href="${deliveryPath(d.event, d.id)}">${isolated(d.id)}</a></td>
        <td>${when(d.received_at)}</td>
        <td class="num">${d.attempts}</td>
        <td class="num">${d.duplicates}</td>
        <td>${forwardMarks(d.forwards)}</td>
      </tr>`,
  );
  return page(
    'Deliveries',
    html`<h1>Deliveries</h1>
      ${notice(view.notice)}
      <form class="search" method="get" action="${PAGE}" role="search">
        <label
          >data.id (exact)<input
            type="search"
            name="id"
            value="${verbatim(q.id ?? '')}"
            autofocus
            placeholder="paste an id"
        /></label>
        <label
          >Event<select name="event">
            ${option('', q.event, 'any')}${view.events.map((e) => option(e, q.event))}
          </select></label
        >
        <label
          >State<select name="state">
            ${option('', q.state, 'any')}${['queued', 'active', 'handled', 'failed'].map((s) => option(s, q.state))}
          </select></label
        >
        <label
          >Destination<select name="destination">
            ${option('', q.destination, 'any')}${view.destinations.map((d) => option(d.entry.name, q.destination))}
          </select></label
        >
        <label
          >Received since (UTC)<input type="datetime-local" name="since" value="${local(q.since)}"
        /></label>
        <label
          >until (UTC)<input type="datetime-local" name="until" value="${local(q.until)}"
        /></label>
        <button class="primary" type="submit">Search</button> <a href="${PAGE}">Clear</a>
      </form>
      <table>
        <caption class="visually">
          Deliveries, newest first
        </caption>
        <thead>
          <tr>
            <th>State</th>
            <th>Event</th>
            <th>data.id</th>
            <th>Received</th>
            <th>Attempts</th>
            <th>Re-sends</th>
            <th>Forwards</th>
          </tr>
        </thead>
        <tbody>
          ${
            rows.length === 0
              ? html`<tr>
                  <td colspan="7">No delivery matches.</td>
                </tr>`
              : rows
          }
        </tbody>
      </table>
      ${view.next === null ? '' : html`<p><a href="${PAGE}?${nextQuery.toString()}" rel="next">Older deliveries →</a></p>`}
      <h2>Forward destinations</h2>
      ${destinationsTable(view.destinations, view.readOnly, PAGE)}`,
  );
}

function destinationsTable(
  destinations: ListView['destinations'],
  readOnly: boolean,
  back: string,
): Html {
  if (destinations.length === 0) return html`<p>No forward destination is configured.</p>`;
  const rows = destinations.map(({ entry, status }) => {
    const paused = status?.state === 'paused';
    const action = paused ? 'resume' : 'pause';
    return html`<tr>
      <td>${entry.name}</td>
      <td>${entry.kind}</td>
      <td>
        ${paused ? html`<strong>paused</strong> (${status.pausedBy === 'operator' ? 'by an operator' : 'failing'})` : 'active'}
      </td>
      <td class="num">${status?.held ?? 0}</td>
      <td>
        ${readOnly ? '' : html`<a class="button" href="${destinationPath(entry.name, action)}?back=${encodeURIComponent(back)}">${paused ? 'Resume' : 'Pause'} ${entry.name}…</a>`}
      </td>
    </tr>`;
  });
  return html`<table>
    <thead>
      <tr>
        <th>Destination</th>
        <th>Kind</th>
        <th>State</th>
        <th>Held</th>
        <th>Action</th>
      </tr>
    </thead>
    <tbody>
      ${rows}
    </tbody>
  </table>`;
}

const pretty = (value: unknown) => JSON.stringify(value, null, 2);

/** The stored audio: a player and a download link, both read from the inspector's API. */
function storedAudio(d: DetailView['api']): Html | '' {
  const item = storedItemOf(d.stored);
  if (item === undefined) return '';
  const src = audioPath(d.event, d.id);
  return html`<audio controls preload="metadata" src="${src}"></audio>
    <p><a href="${src}" download="${item.key}">Download ${item.key}</a></p>`;
}

/** One delivery: what it is, what to do about it, its timeline, forwards, stored item, payload. */
export function detailPage(view: DetailView, readOnly: boolean, shown: ListView['notice']): string {
  const d = view.api;
  const self = deliveryPath(d.event, d.id);
  const actions = readOnly
    ? html`<p class="note info">
        Actions are off: the dashboard is read-only (ADMIN_READ_ONLY=true).
      </p>`
    : html`<div class="actions">
        ${d.state === 'failed' ? html`<a class="button" href="${self}/retry">Retry this delivery…</a>` : ''}
        ${d.state === 'handled' ? html`<a class="button" href="${self}/replay">Replay this delivery…</a>` : ''}
      </div>`;
  const paused = new Map(view.destinations.map((s) => [s.name, s]));
  const forwards = d.forwards.map((f) => {
    const status = paused.get(f.destination);
    const isPaused = status?.state === 'paused';
    return html`<tr>
      <td>${f.destination}</td>
      <td><span class="fw ${f.state}">${MARKS[f.state]} ${f.state}</span></td>
      <td class="num">${f.attempts}</td>
      <td>${f.last_error ?? '—'}</td>
      <td>
        ${isPaused ? html`<strong>paused</strong>` : 'active'}
        ${readOnly ? '' : html` · <a class="button" href="${destinationPath(f.destination, isPaused ? 'resume' : 'pause')}?back=${encodeURIComponent(self)}">${isPaused ? 'Resume' : 'Pause'}…</a>`}
      </td>
    </tr>`;
  });
  const steps = d.timeline.map(
    (s) =>
      html`<li>
        <time datetime="${s.at}">${s.at.replace('T', ' ').replace('Z', ' UTC')}</time>
        <span class="step ${s.step}">${s.step}</span>${s.detail === '' ? '' : html` — ${s.detail}`}
      </li>`,
  );
  const job =
    view.jobId === undefined
      ? '—'
      : html`<a
            href="${QUEUES}/queue/${encodeURIComponent(view.boardQueue ?? 'deliveries')}/${encodeURIComponent(view.jobId)}"
            >${view.jobId}</a
          >
          (in the queue dashboard)`;
  return page(
    `${d.event} ${d.id}`,
    html`<p><a href="${PAGE}">← All deliveries</a></p>
      <h1>${stateBadge(d.state)} ${d.event} <span class="id">${isolated(d.id)}</span></h1>
      ${notice(shown)}
      <dl>
        <dt>Received</dt>
        <dd>${d.received_at} (${age(d.received_at)})</dd>
        <dt>Attempts</dt>
        <dd>${d.attempts}</dd>
        <dt>Re-sent by the provider</dt>
        <dd>${d.duplicates} time(s), each answered “duplicate”</dd>
        <dt>Job</dt>
        <dd>${job}</dd>
        <dt>Trace</dt>
        <dd class="id">${d.trace_id ?? '— (none recorded)'}</dd>
        ${
          view.failedReason === undefined
            ? ''
            : html`<dt>Failed because</dt>
                <dd>${view.failedReason}</dd>`
        }
      </dl>
      ${actions}
      <h2>Timeline</h2>
      <ol class="timeline">
        ${steps}
      </ol>
      <h2>Forwards</h2>
      ${
        d.forwards.length === 0
          ? html`<p>
              No destination was sent this delivery’s message (none configured, or not yet handled).
            </p>`
          : html`<table>
              <thead>
                <tr>
                  <th>Destination</th>
                  <th>State</th>
                  <th>Attempts</th>
                  <th>Last error</th>
                  <th>Destination now</th>
                </tr>
              </thead>
              <tbody>
                ${forwards}
              </tbody>
            </table>`
      }
      <div class="columns">
        <section>
          <h2>Stored</h2>
          ${d.stored === null ? html`<p>Nothing stored.</p>` : html`<pre>${pretty(d.stored)}</pre>`}
          ${storedAudio(d)}
        </section>
        <section>
          <h2>Payload, as received</h2>
          ${d.payload === null ? html`<p>No longer kept: its job holds none, and the archive has none (ARCHIVE_RETENTION_HOURS).</p>` : html`<pre tabindex="0">${pretty(d.payload)}</pre>`}
        </section>
      </div>`,
  );
}
