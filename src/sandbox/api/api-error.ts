/** An answer the sandbox's API gives on purpose: a status, a detail, maybe headers. */
export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    detail: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(detail);
  }
}
