import { z } from 'zod';
import { FAULTS } from '../delivery/faults.js';

/** The sandbox's voices, as `GET /voices` lists them. */
export const VOICES = [
  { id: 'alloy', name: 'Alloy' },
  { id: 'ember', name: 'Ember' },
  { id: 'river', name: 'River' },
  { id: 'sage', name: 'Sage' },
] as const;

const text = z.string().min(1).max(5000);
const VOICE_IDS = VOICES.map((known) => known.id);
/**
 * One of VOICES: a voice the provider does not have is its client's mistake, and one the sandbox
 * let through would hide it until the real provider refuses it.
 */
const voice = z.enum(VOICE_IDS, {
  error: ({ input }) =>
    `${typeof input === 'string' ? `unknown voice ${JSON.stringify(input)}` : 'a voice is required'}: the sandbox's voices are ${VOICE_IDS.join(', ')} (GET /voices)`,
});
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
