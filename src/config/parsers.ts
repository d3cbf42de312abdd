import express from 'express';
import { z } from 'zod';

/**
 * The parsers settings are declared with (settings.ts). Each takes the raw string of an
 * environment variable (or undefined when it is unset or empty) and yields the typed value.
 */
export const int = (min: number, max = Number.MAX_SAFE_INTEGER, rangeMessage?: string) =>
  z
    .string()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .refine((n) => n >= min && n <= max, rangeMessage ?? `must be between ${min} and ${max}`);

/** `auto` (computed when parsed) or a whole number within bounds. */
export const autoOrInt = (auto: () => number, min: number, max: number) =>
  z.string().transform((raw, ctx) => {
    if (raw === 'auto') return auto();
    const n = /^\d+$/.test(raw) ? Number(raw) : NaN;
    if (n >= min && n <= max) return n;
    ctx.addIssue({
      code: 'custom',
      message: `must be auto or a whole number from ${min} to ${max}`,
    });
    return z.NEVER;
  });

export const bool = z
  .enum(['true', 'false'], 'must be true or false')
  .transform((v) => v === 'true');

export const list = (s: string) => s.split(',').map((item) => item.trim());

export const secrets = z
  .string()
  .transform(list)
  .refine((items) => items.every((s) => s.length > 0), 'must not contain an empty secret');

/**
 * A Redis URL as ioredis reads it: `redis://` or `rediss://`, a host, a port from 1 to 65535, a
 * database number as the path, and a user and password whose %-escapes decode. A problem names
 * the part at fault and never quotes the URL, which may hold the password; the value is kept as
 * written.
 */
export const redisUrl = z.string().superRefine((raw, ctx) => {
  const problem = redisUrlProblem(raw);
  if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
});

const BAD_PORT = 'has a port that is not a whole number from 1 to 65535';

function redisUrlProblem(raw: string): string | undefined {
  if (!/^rediss?:\/\//.test(raw)) return 'must start with redis:// or rediss://';
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    // The URL parser says only "Invalid URL": find the part, without quoting any of it.
    const [start = '', authority = ''] = /^rediss?:\/\/([^/?#]*)/.exec(raw) ?? [];
    // A / ? or # in a password ends the authority early, and the rest reads as host and port.
    if (raw.slice(start.length).includes('@'))
      return 'has a / ? or # in its user or password: write them %2F %3F %23';
    const hostPort = authority.slice(authority.lastIndexOf('@') + 1);
    const port = /:([^:\]]*)$/.exec(hostPort)?.[1];
    if (port !== undefined && !(/^\d*$/.test(port) && Number(port) <= 65535)) return BAD_PORT;
    if (hostPort === '' || hostPort.startsWith(':')) return 'names no host';
    return 'is not a valid URL: check its host';
  }
  if (url.hostname === '') return 'names no host';
  if (url.port !== '' && Number(url.port) < 1) return BAD_PORT;
  try {
    decodeURIComponent(url.username);
    decodeURIComponent(url.password);
  } catch {
    return 'has a bad %-escape in its user or password: write a literal % as %25';
  }
  if (!/^\/?(\d+)?$/.test(url.pathname))
    return 'has a path that is not a database number such as /0';
  return undefined;
}

/** `https://host[:port]`, normalised by the URL parser (so `HTTPS://Cdn.Example.com:443` matches). */
export const origin = z.string().transform((raw, ctx) => {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    ctx.addIssue({ code: 'custom', message: `"${raw}" is not a URL` });
    return z.NEVER;
  }
  const bare = url.pathname === '/' && !url.search && !url.hash && !url.username && !url.password;
  if (url.protocol !== 'https:' || !bare) {
    ctx.addIssue({ code: 'custom', message: `"${raw}" is not an origin https://host[:port]` });
    return z.NEVER;
  }
  return url.origin;
});

/** A comma-separated list of origins; unset is the empty list. */
export const origins = z
  .string()
  .optional()
  .transform((raw) => (raw === undefined ? [] : list(raw)))
  .pipe(z.array(origin));

export const trustProxy = z.string().transform((raw, ctx) => {
  const value =
    raw === 'true' ? true : raw === 'false' ? false : /^\d+$/.test(raw) ? Number(raw) : raw;
  try {
    // Express compiles the setting eagerly, so this is the exact check it will apply.
    express().set('trust proxy', value);
  } catch (error: unknown) {
    ctx.addIssue({ code: 'custom', message: `"${raw}" is not valid: ${String(error)}` });
  }
  return value;
});

/** One DNS name: letters, digits and hyphens in dot-separated labels (a trailing dot dropped). */
const HOST_NAME =
  /^(?=.{1,253}$)[a-z\d](?:[a-z\d-]{0,61}[a-z\d])?(?:\.[a-z\d](?:[a-z\d-]{0,61}[a-z\d])?)*$/;

/** Comma-separated host names, lower-cased, without a port; unset is the empty list. */
export const hostNames = z
  .string()
  .optional()
  .transform((raw, ctx) => {
    if (raw === undefined) return [];
    const names = list(raw).map((name) => name.toLowerCase().replace(/\.$/, ''));
    const bad = names.find((name) => !HOST_NAME.test(name));
    if (bad !== undefined) {
      ctx.addIssue({
        code: 'custom',
        message: `"${bad}" is not a host name such as admin.example.com (no scheme, no port)`,
      });
      return z.NEVER;
    }
    return names;
  });

/** An optional path; unset stays undefined. */
export const optionalPath = z.string().optional();

/** `host:port[,host:port…]`; unset is the empty list. */
export const hostPorts = z
  .string()
  .optional()
  .transform((raw, ctx) => {
    if (raw === undefined) return [];
    const parsed: { host: string; port: number }[] = [];
    for (const item of list(raw)) {
      const match = /^(\[[0-9a-fA-F:]+\]|[^\s:[\]]+):(\d{1,5})$/.exec(item);
      const port = Number(match?.[2]);
      if (!match?.[1] || port < 1 || port > 65535) {
        ctx.addIssue({ code: 'custom', message: `"${item}" is not host:port` });
        return z.NEVER;
      }
      parsed.push({ host: match[1].replace(/^\[|\]$/g, ''), port });
    }
    return parsed;
  });
