/**
 * The path of the sample audio the sandbox's CDN serves, and where `audio-webhooks send
 * audio.ready` points `audio_url` (CDN_URL's first origin + this path), so the README's `send`
 * example downloads real audio from the sandbox. A constant, not shared code: the CLI and the
 * sandbox agree on a URL as any client and provider do.
 */
export const SAMPLE_AUDIO_PATH = '/audio/sample.wav';
