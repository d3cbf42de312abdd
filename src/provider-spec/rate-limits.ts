/**
 * The provider's API endpoints and their published rate limits (docs/provider.md): per API key,
 * per minute, sliding. Declared once: the provider client's defaults (PROVIDER_LIMITS) and the
 * sandbox's enforcement both read this table, and nothing else of each other's.
 */
export const SPEC_LIMITS = { tts: 60, 'voice-convert': 20, voices: 600 } as const;

export type Endpoint = keyof typeof SPEC_LIMITS;

export const ENDPOINTS = Object.keys(SPEC_LIMITS) as readonly Endpoint[];

/** `tts=60,voice-convert=20,voices=600`: the table as PROVIDER_LIMITS writes it. */
export const SPEC_LIMITS_SETTING = ENDPOINTS.map((name) => `${name}=${SPEC_LIMITS[name]}`).join(
  ',',
);
