import { request } from 'undici';
import type { Config } from '../settings.js';
import { SAMPLE_AUDIO_PATH } from '../sandbox/cdn/sample-path.js';
import { EVENT_NAMES } from '../provider-spec/events.js';
import { sampleDelivery } from '../provider-spec/sample-delivery.js';
import { signPayload } from '../provider-spec/signature.js';
import { messageOf, OperationalError, UsageError } from './cli-errors.js';
import type { Output } from './print.js';

export interface SendArgs {
  readonly event: string;
  readonly url?: string | undefined;
  /** --secret, else the first of WEBHOOK_SECRETS; the caller decides. */
  readonly secret?: string | undefined;
  readonly id?: string | undefined;
  readonly data?: string | undefined;
}

/** `--data`: a JSON object merged over the sample's data, shallowly (sample-delivery.ts). */
function parseData(raw: string): Record<string, unknown> {
  let data: unknown;
  try {
    data = JSON.parse(raw);
  } catch {
    throw new UsageError('--data must be a JSON object');
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new UsageError('--data must be a JSON object');
  }
  return data as Record<string, unknown>;
}

/**
 * Signs a sample delivery exactly as the provider does (the tests' own signing helper) and POSTs
 * it. Exit code 0 for a 2xx answer, 1 otherwise, so scripts can tell. The answer goes to `output`;
 * a hint, when one helps, to `errors`.
 */
export async function send(
  args: SendArgs,
  config: Config,
  output: Output,
  errors: Output,
): Promise<number> {
  const { secret } = args;
  if (secret === undefined || secret === '') {
    throw new UsageError('no signing secret: pass --secret or set WEBHOOK_SECRETS');
  }
  const data = args.data === undefined ? {} : parseData(args.data);
  const url = args.url ?? `http://127.0.0.1:${config.port}${config.webhookPath}`;
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) {
    throw new UsageError(`--url must be an http:// or https:// URL, not ${JSON.stringify(url)}`);
  }
  const cdn = config.cdnOrigins[0];
  const body = JSON.stringify(
    sampleDelivery(args.event, {
      data,
      ...(args.id === undefined ? {} : { id: args.id }),
      // The sandbox's CDN serves this file, so a sample sent against the sandbox downloads.
      ...(cdn === undefined ? {} : { cdnOrigin: cdn, audioPath: SAMPLE_AUDIO_PATH }),
    }),
  );
  const res = await request(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-service-signature': signPayload(body, secret),
    },
    body,
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  }).catch((error: unknown) => {
    const cause = (error as { cause?: unknown } | null)?.cause;
    const reason = messageOf(cause ?? error);
    throw new OperationalError(`cannot reach ${url}: ${reason}`);
  });
  output.out(`sent ${args.event} ${body}\nHTTP ${res.statusCode}\n${await res.body.text()}\n`);
  // A fork's event has no sample beyond its id: its schema's 400 is then the sample's, not the
  // receiver's fault, and the first thing a new user meets when trying their own event.
  if (res.statusCode === 400 && !(EVENT_NAMES as readonly string[]).includes(args.event)) {
    const hint =
      args.data === undefined
        ? `${args.event} is not a built-in event, so the sample's data is only {"id"}; give its fields with --data '{...}' (merged over the sample, shallowly)`
        : `${args.event} is not a built-in event: its data was {"id"} with --data merged over it, shallowly; the answer says which field its schema refused`;
    errors.out(`audio-webhooks: hint: ${hint}\n`);
  }
  return res.statusCode >= 200 && res.statusCode < 300 ? 0 : 1;
}
