import {
  s3PutCommand,
  type ObjectItem,
  type StoredObject,
  s3ReplaceableObject,
} from './s3-item-object.js';
import type { S3Location } from './s3-location.js';
import { statusOf } from './s3-storage-error.js';

/**
 * Conditional PUTs of one write: each 412 after the first means another run of the item wrote.
 * Enough for several runs of one item at once (a replay, a stalled job, a retry) to all finish,
 * since a run that fails downloads again when retried (docs/performance-history.md, "Figures behind the code").
 */
const CONDITIONAL_ATTEMPTS = 6;

/**
 * One PUT of a body smaller than a part, create-only (S3 and Ceph honour `If-None-Match`). On
 * 412 the object there is looked at: this item's is replaced with `If-Match` on its ETag (one
 * atomic replace, never a delete-then-write gap in which the item is gone); if another run of
 * the item replaced it in between, the look is made again, a bounded number of times.
 * `still`, asked before each replacing PUT (after the look), stops the write when it answers
 * false. The first, create-only PUT does not ask: a run it lets through found no object of the
 * item, and any run that writes the item after it meets a 412 and asks then. Asking there too
 * would cost a HEAD per item on the common path (docs/performance-history.md, "Figures behind the code").
 * What that leaves: a run killed between its audio and its metadata, after another run wrote
 * its metadata beside the killed run's audio, leaves that pair until the killed run's job runs
 * again (its check finds the metadata's SHA-256 is not the audio's and downloads again).
 * Resolves to the ETag the PUT answered, or to undefined when `still` stopped the write.
 */
export async function s3ConditionalPut(
  s3: S3Location,
  name: string,
  body: Buffer,
  item: ObjectItem,
  still?: () => Promise<boolean>,
): Promise<string | undefined> {
  let onto: StoredObject | undefined;
  for (let attempt = 1; ; attempt++) {
    if (still !== undefined && onto !== undefined && !(await still())) return undefined;
    try {
      return (await s3.client.send(s3PutCommand(s3, name, body, body.length, onto, item))).ETag;
    } catch (error: unknown) {
      if (statusOf(error) !== 412 || attempt === CONDITIONAL_ATTEMPTS)
        throw s3.fail(error, `writing ${name}`);
    }
    onto = await s3ReplaceableObject(s3, name, item?.id);
  }
}
