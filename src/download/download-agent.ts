import { readFile } from 'node:fs/promises';
import type { DownloadSettings } from '../config/download-settings.js';
import { withDeadline } from '../util/deadline.js';
import { createGuardedAgent } from './guarded-agent.js';

const SECOND = 1000;

/** The settings a worker's download agent is made from. */
export type DownloadAgentConfig = Pick<
  DownloadSettings,
  'downloadCaFile' | 'downloadTimeoutMs' | 'downloadAllowPrivateIps'
>;

/**
 * The SSRF-guarded undici Agent every download of a worker goes through: DOWNLOAD_CA_FILE's
 * certificates and `extraCa` trusted besides Node's, its bounds taken from DOWNLOAD_TIMEOUT_MS.
 */
export async function createDownloadAgent(
  config: DownloadAgentConfig,
  extraCa: string | undefined,
): Promise<ReturnType<typeof createGuardedAgent>> {
  const ca = [
    ...(config.downloadCaFile === undefined ? [] : [await readCaFile(config.downloadCaFile)]),
    ...(extraCa === undefined ? [] : [extraCa]),
  ];
  const timeout = config.downloadTimeoutMs;
  return createGuardedAgent({
    allowPrivateIps: config.downloadAllowPrivateIps,
    ...(ca.length === 0 ? {} : { ca }),
    connectTimeoutMs: Math.min(10 * SECOND, timeout),
    headersTimeoutMs: Math.min(30 * SECOND, timeout),
    bodyIdleTimeoutMs: Math.min(30 * SECOND, timeout),
  });
}

/** A startup error that names the setting, not a stack trace. */
export class CaFileError extends Error {
  override name = 'CaFileError';
}

/** A CA file is a few kB on a local disk; one that takes this long is a FIFO or a hung mount. */
const CA_FILE_DEADLINE_MS = 5_000;

async function readCaFile(path: string): Promise<string> {
  const read = withDeadline(readFile(path, 'utf8'), CA_FILE_DEADLINE_MS, 'reading it');
  const pem = await read.catch((error: unknown) => {
    throw new CaFileError(`DOWNLOAD_CA_FILE ${path} cannot be read: ${String(error)}`);
  });
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) {
    throw new CaFileError(`DOWNLOAD_CA_FILE ${path} holds no PEM certificate`);
  }
  return pem;
}
