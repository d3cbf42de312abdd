/** What a filter is matched against: the forwarded message's fields (docs/forwarding.md). */
export interface FilterableMessage {
  readonly type: string;
  readonly id: string;
  readonly timestamp: string;
  readonly data: unknown;
  readonly stored?: unknown;
}

/** A destination's FORWARD_CONFIG filter, checked and compiled at start. */
export interface MessageFilter {
  /** The filter as written in the file (for `forward status --json` and the docs). */
  readonly source: unknown;
  matches(message: FilterableMessage): boolean;
}
