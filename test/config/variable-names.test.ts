import { SETTINGS } from '../../src/settings';
import {
  knownPrefixes,
  unknownVariables,
  unknownVariableWarning,
} from '../../src/config/variable-names';
import { problems } from '../helpers/config-problems';

const known = new Set(Object.keys(SETTINGS));

describe('a misspelt variable', () => {
  it('WEBHOOK_SECRET for WEBHOOK_SECRETS: the refusal names both', () => {
    expect(problems({ WEBHOOK_SECRET: 'whsec_abc' })).toEqual([
      'WEBHOOK_SECRETS is required (WEBHOOK_SECRET is set: did you mean WEBHOOK_SECRETS?)',
    ]);
    expect(problems({ webhook_secrets: 'whsec_abc' })).toEqual([
      'WEBHOOK_SECRETS is required (webhook_secrets is set: did you mean WEBHOOK_SECRETS?)',
    ]);
    // Nothing like it set: the plain refusal.
    expect(problems({ PATH: '/bin', HOME: '/root' })).toEqual(['WEBHOOK_SECRETS is required']);
  });

  it('an invalid variable with a slip of its name set beside it names that too', () => {
    expect(problems({ WEBHOOK_SECRETS: 's', MAX_BODY_BYTES: 'big', MAX_BODY_BYTE: '10' })).toEqual([
      'MAX_BODY_BYTES must be a whole number (MAX_BODY_BYTE is set: did you mean MAX_BODY_BYTES?)',
    ]);
  });

  it('starting like a known one but none: named, with the setting it reads as a slip for', () => {
    const env = {
      REDIS_URLS: 'redis://elsewhere:6379',
      ADMIN_PASWORD: 'x',
      S3_BUCKETNAME: 'b',
      QUEUE_SHARDZ: '4',
      // Not ours: another program's prefix, or no prefix of ours at all.
      OTEL_SERVICE_NAME: 'aw',
      PATH: '/bin',
      NODE_OPTIONS: '',
      // Known names are never reported.
      REDIS_URL: 'redis://127.0.0.1:6379',
      WEBHOOK_SECRETS: 's',
    };
    expect(unknownVariables(env, known)).toEqual([
      { name: 'ADMIN_PASWORD', meant: 'ADMIN_PASSWORD' },
      { name: 'QUEUE_SHARDZ', meant: 'QUEUE_SHARDS' },
      { name: 'REDIS_URLS', meant: 'REDIS_URL' },
      { name: 'S3_BUCKETNAME' },
    ]);
    expect(unknownVariableWarning({ name: 'REDIS_URLS', meant: 'REDIS_URL' })).toBe(
      'REDIS_URLS is not a setting of this service and is ignored: did you mean REDIS_URL?',
    );
  });

  it('the prefixes follow from the declared names, so a new setting brings its own', () => {
    const prefixes = knownPrefixes(known);
    for (const prefix of ['WEBHOOK_', 'REDIS_', 'ADMIN_', 'FORWARD_', 'S3_', 'AUDIO_', 'DOWNLOAD_'])
      expect(prefixes).toContain(prefix);
    expect(prefixes).not.toContain('OTEL_');
    const grown = new Set([...known, 'QUEUE_SHARDS', 'TRACE_SAMPLE_RATE']);
    expect(unknownVariables({ QUEUE_SHARDS: '2', TRACE_SAMPLER: 'x' }, grown)).toEqual([
      { name: 'TRACE_SAMPLER' },
    ]);
  });
});

describe('every bad variable in one refusal, cross-checks included', () => {
  it('DEDUPE_TTL_SECONDS=60 with SIGNATURE_TOLERANCE_SECONDS=soon names both: 60 is short at any tolerance', () => {
    expect(
      problems({
        WEBHOOK_SECRETS: 's',
        DEDUPE_TTL_SECONDS: '60',
        SIGNATURE_TOLERANCE_SECONDS: 'soon',
      }),
    ).toEqual([
      'SIGNATURE_TOLERANCE_SECONDS must be a whole number',
      "DEDUPE_TTL_SECONDS (60) must exceed the sender's retry window (30930 s) plus SIGNATURE_TOLERANCE_SECONDS (at least 1), 30931 s: a retry is accepted that long after the first attempt, and must be found a duplicate",
    ]);
    // A TTL that some tolerance would allow is not judged against a tolerance nobody can read.
    expect(
      problems({
        WEBHOOK_SECRETS: 's',
        DEDUPE_TTL_SECONDS: '40000',
        SIGNATURE_TOLERANCE_SECONDS: 'soon',
      }),
    ).toEqual(['SIGNATURE_TOLERANCE_SECONDS must be a whole number']);
  });

  it('a variable that does not parse, and cross-checks between others that do, in one refusal', () => {
    expect(
      problems({
        WEBHOOK_SECRETS: 'whsec_replace_me',
        HOST: '0.0.0.0',
        ADMIN_PASSWORD: 'short',
        PORT: '9464',
        INTERNAL_PORT: '9464',
        MAX_BODY_BYTES: 'lots',
        WORKER_STALL_MS: '1000',
      }),
    ).toEqual([
      expect.stringMatching(/^MAX_BODY_BYTES must be a whole number/),
      expect.stringMatching(/^WEBHOOK_SECRETS is an example from this repository/),
      expect.stringMatching(/^ADMIN_PASSWORD is shorter than 16 characters/),
      expect.stringMatching(/^INTERNAL_PORT \(9464\) must differ from PORT/),
      expect.stringMatching(/^WORKER_STALL_MS \(1000\) must exceed DOWNLOAD_TIMEOUT_MS/),
    ]);
  });
});
