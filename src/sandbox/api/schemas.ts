import { z } from 'zod';
import { FAULTS } from '../delivery/faults.js';

const text = z.string().min(1).max(5000);
const voice = z.string().min(1).max(100);
/** Ids end up in deliveries: the receiver refuses lone surrogates, so the sandbox does too. */
const id = z
  .string()
  .min(1)
  .max(256)
  .refine((value) => !/\p{Cs}/u.test(value), 'must be well-formed Unicode');

export const ttsRequest = z.strictObject({ text, voice });
export const voiceConvertRequest = z.strictObject({ audio_url: z.url(), voice });
export const batchRequest = z.strictObject({
  items: z
    .array(z.strictObject({ id: id.optional(), text, voice }))
    .min(1)
    .max(10_000),
  fail: z.array(id).optional(),
});
export const eventRequest = z.strictObject({
  event: z.string().min(1),
  data: z.looseObject({ id }),
  faults: z.array(z.enum(FAULTS)).optional(),
});

/** The first problem of a failed parse, as a readable detail. */
export function firstProblem(error: z.ZodError): string {
  const issue = error.issues[0];
  return issue === undefined
    ? 'invalid request'
    : `${issue.path.join('.') || 'body'}: ${issue.message}`;
}
