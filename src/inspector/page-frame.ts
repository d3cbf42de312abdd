import { html, Html } from './html.js';
import type { ForwardState } from './timeline-queries.js';

/**
 * What every inspector page shares: its frame (header, links, stylesheet), and how a state, a
 * destination's part and an age are shown.
 */

/** The queue dashboard, which the pages link to (receiver/admin-dashboard.ts's ADMIN_PATH). */
export const QUEUES = '/admin/queues';
export const PAGE = '/admin/deliveries';

/** A delivery's page, from its event and id (each percent-encoded: an id may hold a `/`). */
export const deliveryPath = (event: string, id: string) =>
  `${PAGE}/${encodeURIComponent(event)}/${encodeURIComponent(id)}`;
/** Its stored audio, from the inspector's API. */
export const audioPath = (event: string, id: string) =>
  `/admin/api/deliveries/${encodeURIComponent(event)}/${encodeURIComponent(id)}/audio`;
export const destinationPath = (name: string, action: 'pause' | 'resume') =>
  `${PAGE}/destinations/${encodeURIComponent(name)}/${action}`;

// No script, and no style from elsewhere (the dashboard's CSP): the colours say the state,
// and the state is always a word too. An action is a link styled as a button: it opens the
// page that says what the action will do, whose own button (a form's POST) does it.
const STYLE = `
body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
header{background:#24292f;color:#fff;padding:.6rem 1.5rem;display:flex;gap:1.5rem;align-items:center}
header a{color:#fff}header strong{font-size:1.1rem}
main{max-width:1200px;margin:0 auto;padding:1rem 1.5rem}
a{color:#0550ae}:focus-visible{outline:3px solid #0969da;outline-offset:2px}
form.search{display:flex;flex-wrap:wrap;gap:.6rem;align-items:end;background:#fff;padding:.8rem;border:1px solid #d0d7de;border-radius:6px}
label{display:flex;flex-direction:column;font-size:.8rem;color:#57606a;gap:.15rem}
input,select,button{font:inherit;padding:.3rem .5rem;border:1px solid #8c959f;border-radius:4px;background:#fff}
input[name=id]{min-width:22rem}
button{cursor:pointer;background:#f3f4f6}button.primary{background:#1f883d;color:#fff;border-color:#1a7f37}
button.danger{background:#cf222e;color:#fff;border-color:#a40e26}
table{border-collapse:collapse;width:100%;background:#fff;border:1px solid #d0d7de;margin:.8rem 0}
th,td{text-align:left;padding:.4rem .6rem;border-bottom:1px solid #eaeef2;vertical-align:top}
th{background:#f6f8fa;font-size:.85rem}td.num{text-align:right}
.state{display:inline-block;padding:.05rem .5rem;border-radius:1rem;font-weight:600;font-size:.85rem;color:#fff}
.state.queued{background:#6e7781}.state.active{background:#0969da}.state.handled{background:#1a7f37}.state.failed{background:#cf222e}
.fw{display:inline-block;margin-right:.35rem;white-space:nowrap;font-size:.85rem}
.fw.sent{color:#1a7f37}.fw.failed{color:#cf222e}.fw.held{color:#9a6700}.fw.pending{color:#57606a}.fw.filtered{color:#8c959f}
.note{padding:.6rem .8rem;border-radius:6px;margin:.8rem 0;border:1px solid}
.note.done{background:#dafbe1;border-color:#4ac26b}.note.problem{background:#ffebe9;border-color:#ff8182}
.note.info{background:#ddf4ff;border-color:#54aeff}
pre{background:#fff;border:1px solid #d0d7de;padding:.8rem;overflow:auto;max-height:28rem;font:13px/1.4 ui-monospace,monospace}
ol.timeline{background:#fff;border:1px solid #d0d7de;padding:.6rem .6rem .6rem 2.5rem;margin:.8rem 0}
ol.timeline li{padding:.2rem 0}ol.timeline time{color:#57606a;font-variant-numeric:tabular-nums}
.step{font-weight:600}.step.attempt_failed,.step.failed,.step.forward_failed{color:#cf222e}
.step.handled,.step.forwarded{color:#1a7f37}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem;background:#fff;border:1px solid #d0d7de;padding:.8rem}
dt{color:#57606a}dd{margin:0;word-break:break-all}
.actions{display:flex;gap:.6rem;margin:.8rem 0}.actions form{margin:0}
a.button{display:inline-block;padding:.25rem .7rem;border:1px solid #8c959f;border-radius:4px;background:#f3f4f6;color:#1f2328;text-decoration:none;font-size:.9rem}
a.button:hover{background:#eaeef2}
.columns{display:grid;grid-template-columns:1fr 1fr;gap:1rem}
.id{word-break:break-all;font-family:ui-monospace,monospace}
.visually{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%)}`;

/**
 * A whole page: the same frame around every view. Its referrer policy is `same-origin`, not the
 * service's `no-referrer`: under that one, Chromium sends a form's POST with `Origin: null`, and
 * the dashboard's CSRF check (an Origin naming this host) refuses every action the page offers.
 */
export function page(title: string, body: Html): string {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="referrer" content="same-origin" />
        <meta name="viewport" content="width=device-width" />
        <title>${title} · audio-webhooks</title>
        <style>
          ${new Html(STYLE)}
        </style>
      </head>
      <body>
        <header>
          <strong>audio-webhooks</strong>
          <nav><a href="${PAGE}">Deliveries</a> · <a href="${QUEUES}">Queues (bull-board)</a></nav>
        </header>
        <main>${body}</main>
      </body>
    </html>`.text;
}

export const stateBadge = (state: string) => html`<span class="state ${state}">${state}</span>`;

export const MARKS: Readonly<Record<ForwardState, string>> = {
  sent: '✓',
  pending: '…',
  held: '⏸',
  failed: '✗',
  filtered: '–',
};

export const forwardMarks = (forwards: Readonly<Record<string, ForwardState>>) =>
  Object.entries(forwards).map(
    ([name, state]) =>
      html`<span class="fw ${state}" title="${name}: ${state}"
        >${MARKS[state]} ${name} <span class="visually">(${state})</span></span
      >`,
  );

/** How long ago, in the largest unit that fits: "12 s", "5 min", "3 h", "2 d". */
export function age(iso: string, now = Date.now()): string {
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (seconds < 90) return `${seconds} s ago`;
  if (seconds < 90 * 60) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 36 * 3600) return `${Math.round(seconds / 3600)} h ago`;
  return `${Math.round(seconds / 86400)} d ago`;
}

export const when = (iso: string) =>
  html`<time datetime="${iso}" title="${iso}">${age(iso)}</time>`;

/** The confirmation an action asks: what will happen, one button to do it, a way back. */
export function confirmPage(
  title: string,
  explanation: string,
  action: string,
  back: string,
  danger: boolean,
): string {
  return page(
    title,
    html`<h1>${title}</h1>
      <p class="note info">${explanation}</p>
      <form method="post" action="${action}">
        <input type="hidden" name="back" value="${back}" />
        <div class="actions">
          <button class="${danger ? 'danger' : 'primary'}" type="submit" autofocus>
            ${title.replace(/\?$/, '')}
          </button>
          <a href="${back}">Cancel</a>
        </div>
      </form>`,
  );
}
