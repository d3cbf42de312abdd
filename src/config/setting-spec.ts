import type { z } from 'zod';

/** Which process reads a setting: the HTTP receiver, the workers, or the operator CLI. */
export type Reader = 'web' | 'worker' | 'cli' | 'sandbox' | 'client';

export interface SettingSpec {
  /** Parses the raw value (the default when unset; undefined when there is neither). */
  readonly schema: z.ZodType;
  /** The raw default, as it would be written in the environment; absent: none. */
  readonly default?: string;
  /** Start-up is refused without it (the CLI is let off: `send` takes --secret). */
  readonly required?: true;
  /** The Config field, when the camel-cased name would read badly. */
  readonly key?: string;
  readonly readBy: readonly Reader[];
  /** One line for docs/configuration.md's table and .env.example. */
  readonly doc: string;
}
