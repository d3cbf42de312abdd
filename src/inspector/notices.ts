/**
 * What the page's status box may say after an action: a code in the address (`?notice=retried`)
 * names one of these texts, all written here. The box is the page's own voice, so no text from
 * the address is ever shown in it: an unknown code shows nothing.
 */
export const NOTICES = {
  retried: { kind: 'done', text: 'Its failed job was put back on the queue with fresh attempts.' },
  replayed: {
    kind: 'done',
    text: 'Queued again from the archive: its handling runs as for a new delivery.',
  },
  paused: {
    kind: 'done',
    text: 'The destination is now paused for every worker: its messages are held until it is resumed.',
  },
  resumed: {
    kind: 'done',
    text: 'The destination is now active: every worker sends to it again, and its held messages go out in batches.',
  },
  already_paused: { kind: 'done', text: 'The destination was paused already.' },
  already_active: { kind: 'done', text: 'The destination was active already.' },
  not_failed: { kind: 'problem', text: 'The delivery is not failed: there is nothing to retry.' },
  job_gone: { kind: 'problem', text: 'Its failed job is gone: replay it instead.' },
  not_handled: {
    kind: 'problem',
    text: 'The delivery is not handled: only a handled delivery is replayed.',
  },
  not_archived: {
    kind: 'problem',
    text: 'Nothing is archived for it (ARCHIVE_RETENTION_HOURS): it cannot be replayed.',
  },
  replay_queued: { kind: 'problem', text: 'A replay of it is queued already.' },
  unknown_delivery: { kind: 'problem', text: 'No delivery of that event and id is kept.' },
  unknown_destination: { kind: 'problem', text: 'No forward destination has that name.' },
} as const satisfies Readonly<
  Record<string, { readonly kind: 'done' | 'problem'; readonly text: string }>
>;

export type NoticeCode = keyof typeof NOTICES;

export type Notice = (typeof NOTICES)[NoticeCode];

/** The notice a code names; undefined for anything else (an own key only: not `constructor`). */
export function noticeOf(code: unknown): Notice | undefined {
  return typeof code === 'string' && Object.hasOwn(NOTICES, code)
    ? NOTICES[code as NoticeCode]
    : undefined;
}
