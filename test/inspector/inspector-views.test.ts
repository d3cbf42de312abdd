import { escapeHtml, html } from '../../src/inspector/html';
import { age, confirmPage, deliveryPath } from '../../src/inspector/page-frame';
import { detailPage, listPage } from '../../src/inspector/page-views';
import type { DetailView } from '../../src/inspector/inspector';

const hostile = '<script>alert("x")</script>&\'';

describe('html', () => {
  it('escapes every interpolation, joins arrays, leaves out null, undefined and false', () => {
    expect(html`<td>${hostile}</td>`.text).toBe(
      '<td>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;</td>',
    );
    expect(html`<p>${['a', html`<b>${'<'}</b>`]}${null}${undefined}${false}${0}</p>`.text).toBe(
      '<p>a<b>&lt;</b>0</p>',
    );
    expect(escapeHtml('"quoted" & <tagged>')).toBe('&quot;quoted&quot; &amp; &lt;tagged&gt;');
  });
});

it('a delivery path percent-encodes event and id, so an id with a slash is one segment', () => {
  expect(deliveryPath('audio.ready', 'a/b c?')).toBe('/admin/deliveries/audio.ready/a%2Fb%20c%3F');
});

it('ages read in the largest unit that fits', () => {
  const now = Date.parse('2026-11-27T12:00:00Z');
  const ago = (ms: number) => age(new Date(now - ms).toISOString(), now);
  expect([ago(5_000), ago(10 * 60_000), ago(5 * 3600_000), ago(3 * 86_400_000)]).toEqual([
    '5 s ago',
    '10 min ago',
    '5 h ago',
    '3 d ago',
  ]);
});

const delivery = {
  event: 'audio.ready',
  id: hostile,
  received_at: '2026-11-27T11:59:00.000Z',
  state: 'failed' as const,
  attempts: 2,
  duplicates: 1,
};

it('the list: a sender-written id is shown, never markup; states as words; one mark per destination', () => {
  const page = listPage({
    query: { id: hostile, limit: 50, since: Date.parse('2026-11-27T10:30:00Z') },
    deliveries: [{ ...delivery, forwards: { indexer: 'held', audit: 'sent' } }],
    next: 'CURSOR',
    events: ['audio.ready'],
    destinations: [],
    readOnly: true,
  });
  expect(page).not.toContain('<script>');
  expect(page).toContain('&lt;script&gt;');
  expect(page).toContain('<span class="state failed">failed</span>');
  expect(page).toContain('⏸ indexer');
  expect(page).toContain('✓ audit');
  expect(page).toContain('cursor=CURSOR');
  // The time filter shows as the field holds it (UTC, to the minute), and pages carry it on.
  expect(page).toContain('name="since" value="2026-11-27T10:30"');
  expect(page).toContain(`since=${Date.parse('2026-11-27T10:30:00Z')}`);
  expect(page).toContain(`href="${escapeHtml(deliveryPath('audio.ready', hostile))}"`);
});

it('a delivery: actions only when writes are on, each a link to its confirmation', () => {
  const view: DetailView = {
    api: {
      ...delivery,
      payload: { event: 'audio.ready', data: { id: hostile } },
      stored: null,
      trace_id: null,
      timeline: [],
      forwards: [],
    },
    jobId: 'job-1',
    failedReason: '404: the CDN refused the download',
    destinations: [],
  };
  const writable = detailPage(view, false, undefined);
  expect(writable).toContain('Retry this delivery…');
  expect(writable).not.toContain('Replay this delivery…');
  expect(writable).toContain('/admin/queues/queue/deliveries/job-1');
  expect(writable).not.toContain('<script>');
  const readOnly = detailPage(view, true, { kind: 'done', text: hostile });
  expect(readOnly).not.toContain('Retry this delivery…');
  expect(readOnly).toContain('Actions are off');
  expect(readOnly).not.toContain('<script>');
  const confirm = confirmPage(
    'Pause destination x?',
    'Every worker holds…',
    '/admin/deliveries/destinations/x/pause',
    '/admin/deliveries',
    true,
  );
  expect(confirm).toContain('<form method="post" action="/admin/deliveries/destinations/x/pause">');
  expect(confirm).toMatch(
    /<button class="danger" type="submit" autofocus>\s*Pause destination x\s*<\/button>/,
  );
});

describe('a sender-written id holding what a page would hide or obey', () => {
  const sly = 'key-\u202Egnp.exe\u200B\u001B[31m\nend';
  const shown = 'key-\\u{202e}gnp.exe\\u{200b}\\u{1b}[31m\\u{a}end';
  const listed = listPage({
    query: { id: sly, limit: 50 },
    deliveries: [{ ...delivery, id: sly, forwards: {} }],
    next: null,
    events: ['audio.ready'],
    destinations: [],
    readOnly: true,
  });
  const detail = detailPage(
    {
      api: {
        ...delivery,
        id: sly,
        payload: { data: { id: sly } },
        stored: { key: 'a.mp3', bytes: 3, sha256: 'x', content_type: 'audio/mpeg' },
        timeline: [],
        forwards: [],
        trace_id: null,
      },
      jobId: undefined,
      failedReason: `bad ${sly}`,
      destinations: [],
    },
    true,
    undefined,
  );

  it('is isolated in <bdi>, each such character visible as \\u{…}, on the list and its page', () => {
    expect(listed).toContain(`<bdi>${shown}</bdi>`);
    expect(detail).toContain(`<span class="id"><bdi>${shown}</bdi></span>`);
    // Shown nowhere raw: the search field's value aside, which is not shown as text.
    const field = `value="${sly}"`;
    for (const page of [listed.replace(field, ''), detail]) {
      for (const raw of ['\u202E', '\u200B', '\u001B']) expect(page).not.toContain(raw);
    }
  });

  it('the search field keeps the id as it is, so a search finds it again', () => {
    expect(listed).toMatch(/name="id"\s+value="([^"]*)"/);
    expect(/name="id"\s+value="([^"]*)"/.exec(listed)?.[1]).toBe(sly);
  });

  it('the stored audio: a player and a download link to the API', () => {
    const src = `/admin/api/deliveries/audio.ready/${encodeURIComponent(sly)}/audio`;
    expect(detail).toContain(`<audio controls preload="metadata" src="${src}"></audio>`);
    expect(detail).toContain(`<a href="${src}" download="a.mp3">`);
  });
});
