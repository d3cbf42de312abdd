import { z } from 'zod';
import { int, list } from '../config/parsers.js';
import type { SettingSpec } from '../config/settings.js';

import { ENDPOINTS, SPEC_LIMITS_SETTING, type Endpoint } from '../provider-spec/rate-limits.js';

export type { Endpoint } from '../provider-spec/rate-limits.js';

export interface ApiKeyConfig {
  readonly id: string;
  readonly token: string;
}

const keys = z
  .string()
  .optional()
  .transform((raw, ctx) => {
    if (raw === undefined) return [];
    const parsed: ApiKeyConfig[] = [];
    for (const item of list(raw)) {
      const eq = item.indexOf('=');
      if (eq <= 0 || eq === item.length - 1) {
        ctx.addIssue({ code: 'custom', message: 'must be key_id=token[,key_id=token…]' });
        return z.NEVER;
      }
      parsed.push({ id: item.slice(0, eq), token: item.slice(eq + 1) });
    }
    return parsed;
  });

const limits = z.string().transform((raw, ctx) => {
  const parsed: Partial<Record<Endpoint, number>> = {};
  for (const item of list(raw)) {
    const [name, value] = item.split('=');
    if (!ENDPOINTS.includes(name as Endpoint) || !/^\d+$/.test(value ?? '') || Number(value) < 1) {
      ctx.addIssue({
        code: 'custom',
        message: `"${item}": must be tts=N, voice-convert=N or voices=N with N ≥ 1`,
      });
      return z.NEVER;
    }
    parsed[name as Endpoint] = Number(value);
  }
  return parsed;
});

const baseUrl = z
  .string()
  .optional()
  .refine((raw) => {
    if (raw === undefined) return true;
    try {
      return /^https?:$/.test(new URL(raw).protocol);
    } catch {
      return false;
    }
  }, 'must be an http:// or https:// URL');

/** The provider client's settings (docs/provider-client.md), declared once. */
export const PROVIDER_SETTINGS = {
  PROVIDER_BASE_URL: { schema: baseUrl, readBy: ['client'], doc: "the provider's {base_url}" },
  PROVIDER_API_KEYS: {
    schema: keys,
    readBy: ['client'],
    doc: '`key_id=token[,key_id=token…]`, used in order',
  },
  PROVIDER_LIMITS: {
    schema: limits,
    default: SPEC_LIMITS_SETTING,
    readBy: ['client'],
    doc: 'per key and window; raise for an enterprise contract',
  },
  PROVIDER_RATE_WINDOW_MS: {
    schema: int(1),
    default: '60000',
    readBy: ['client'],
    doc: 'the window the limits count in',
  },
  TTS_CACHE_TTL_SECONDS: {
    schema: int(0),
    default: '86400',
    readBy: ['client'],
    doc: 'identical TTS requests within this time are served from the cache; `0` turns it off',
  },
} as const satisfies Record<string, SettingSpec>;
