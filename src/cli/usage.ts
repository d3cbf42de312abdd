/** One entry per command: its synopsis and what it does; `help` and `<command> --help` print them. */
export const COMMANDS: Readonly<
  Record<string, { readonly synopsis: string; readonly does: string }>
> = {
  send: {
    synopsis: 'send <event> [--url U] [--secret S] [--id ID] [--data JSON]',
    does: "sign a sample delivery as the provider does and POST it (default URL: this PORT and WEBHOOK_PATH); the sample's data is {id, kind, audio_url, voice, created_at} for audio.ready, only {id} for any other event; --data is merged over it, shallowly (a key given replaces the sample's, a nested object whole)",
  },
  failed: {
    synopsis: 'failed [--json]',
    does: 'failed jobs: id, event, data.id, reason, attempts',
  },
  retry: {
    synopsis: 'retry <jobId> | --all',
    does: 'put failed jobs back on the queue: a delivery is handled again, a forward sent again',
  },
  'revoked-keys': { synopsis: 'revoked-keys [--json]', does: 'the revocation registry' },
  failures: {
    synopsis: 'failures [--json]',
    does: 'recorded audio.failed events, then forwards past FORWARD_ATTEMPTS (id, destination, message_id, reason)',
  },
  sandbox: {
    synopsis:
      'sandbox [--host H] [--port P] [--cdn-port P] [--public-host H] [--webhook-url U] [--secret S]\n          [--time-scale X] [--rate-window-ms MS] [--delivery-timeout-ms MS] [--dir D]',
    does: "run a local stand-in for the provider (API, CDN, signed deliveries with the provider's retries) until SIGTERM/SIGINT",
  },
  tts: {
    synopsis: 'tts "<text>" --voice V --out FILE | tts --file LINES.txt --voice V --out-dir DIR',
    does: 'text-to-speech through the shared rate limits, the TTS cache and the key pool; --file: one request per line, one at a time, resumable',
  },
  voices: { synopsis: 'voices [--json]', does: "the provider's voice list" },
  replay: {
    synopsis:
      'replay --id ID [--id ID…] | --since WHEN [--until WHEN]  [--event E] [--dry-run [--json]] [--yes]',
    does: 'put archived deliveries on the queue again (handled as new: missing audio downloaded, hooks run, context.delivery.replay); WHEN: ISO 8601 or 90m, 2h, 3d back; --dry-run lists event, id, received_at; on a terminal it says how many and asks first, unless --yes',
  },
  forward: {
    synopsis:
      'forward status [--json] | forward pause <name> | forward resume <name> | forward public-key\n          | forward test-filter <json> [--since WHEN] [--until WHEN] [--event E] [--json]',
    does: "the forward destinations: status lists each (name, kind, state, messages waiting, oldest's age); pause / resume hold or release one for every worker; public-key prints the whpk_ public key of each FORWARD_SIGNING_KEY (what consumers verify v1a signatures with); test-filter runs a FORWARD_CONFIG filter over the archived deliveries and says how many it matches of how many it read, and the first 10 ids (the message it sees: type, id, timestamp = when received, data; no stored)",
  },
  inspect: {
    synopsis: 'inspect <id> [--event E] [--json]',
    does: "what happened to the delivery of this data.id: its state, timeline (received, re-sends, each attempt and why it failed, stored, handled or failed, forwarded per destination, retried, replayed) and forwards; --json prints the inspector API's object; exit 1 when none is kept",
  },
  queue: {
    synopsis: 'queue keys [--json]',
    does: "each wait list where a job waits for a worker: one per shard of the deliveries (QUEUE_SHARDS), then the forwards'; what KEDA's Redis triggers measure",
  },
  help: { synopsis: 'help [command]', does: "this text, or one command's" },
};

export const USAGE = `usage: audio-webhooks <command> [options]   (configured by the service's environment variables; .env is read when present)

${Object.values(COMMANDS)
  .map(({ synopsis, does }) => `  ${synopsis}\n      ${does}`)
  .join('\n')}

exit codes: 0 success, 1 Redis, the store or the URL unreachable (or send got no 2xx, or replay found nothing archived for an id, or inspect found no delivery), 2 bad arguments
`;

export function commandUsage(command: string): string {
  const entry = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
  return entry === undefined
    ? USAGE
    : `usage: audio-webhooks ${entry.synopsis}\n\n  ${entry.does}\n`;
}
