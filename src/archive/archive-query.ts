/** Which archived deliveries a query wants. Every field narrows; none: all of them. */
export interface ArchiveQuery {
  /** Received at or after. */
  readonly since?: Date;
  /** Received at or before. */
  readonly until?: Date;
  /** Only these `data.id`s. */
  readonly ids?: readonly string[];
  /** Only this event. */
  readonly event?: string;
}

/** A query's time range in epoch ms, open ends as infinities. */
export function queryRange(query: ArchiveQuery): { since: number; until: number } {
  return {
    since: query.since?.getTime() ?? -Infinity,
    until: query.until?.getTime() ?? Infinity,
  };
}
