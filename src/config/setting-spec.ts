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

type Camel<S extends string> = S extends `${infer Head}_${infer Tail}`
  ? `${Lowercase<Head>}${Capitalize<Camel<Tail>>}`
  : Lowercase<S>;
type FieldOf<Table, N extends keyof Table & string> = Table[N] extends {
  key: infer K extends string;
}
  ? K
  : Camel<N>;

/**
 * A table of settings, typed as parsed: `DOWNLOAD_MAX_BYTES` → `downloadMaxBytes: number`. Here,
 * beside SettingSpec, so that each area's file types its own slice without importing config.ts
 * (which imports the areas).
 */
export type ParsedSettings<Table extends Readonly<Record<string, SettingSpec>>> = {
  readonly [N in keyof Table & string as FieldOf<Table, N>]: Readonly<z.output<Table[N]['schema']>>;
};
