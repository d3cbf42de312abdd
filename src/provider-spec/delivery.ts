import type { z } from 'zod';

/** What every delivery carries, built-in or not: the envelope the receiver checks first. */
export interface Delivery {
  readonly event: string;
  readonly data: Readonly<Record<string, unknown>> & { readonly id: string };
}

/** A zod object schema of a delivery's `data`; it has `id`, the item's identifier. */
export type EventDataSchema = z.ZodObject<{ id: z.ZodType<string> } & z.core.$ZodShape>;
