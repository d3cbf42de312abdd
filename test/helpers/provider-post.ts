/**
 * Posts a delivery as the provider does: a 503 (a store past its deadline on a busy machine) is
 * sent again, up to `tries` times in all. Returns the status it settled on; a re-send may
 * rightly be answered 200 duplicate, since a write that timed out may still have landed.
 */
export async function postAsProvider(
  send: () => Promise<number>,
  tries = 20,
): Promise<{ status: number; resent: boolean }> {
  for (let attempt = 1; ; attempt++) {
    const status = await send();
    if (status !== 503 || attempt === tries) return { status, resent: attempt > 1 };
  }
}

/** The status a new delivery posted with `postAsProvider` must settle on: 202, or 200 after a re-send. */
export function accepted(answer: { status: number; resent: boolean }): number {
  return answer.resent && answer.status === 200 ? 202 : answer.status;
}
