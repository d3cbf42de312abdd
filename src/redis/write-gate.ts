import type { Logger } from 'pino';
import { withDeadline } from '../util/deadline.js';
import type { RedisConnection } from './connections.js';
import {
  isRefusal,
  policyProblem,
  readRedisMemory,
  refusalOf,
  type HoldReason,
  type RedisMemory,
} from './redis-memory.js';

export interface WriteGateOptions {
  readonly logger: Logger;
  /** The process's part, in its log lines: `web`, `worker`. */
  readonly name: string;
  /** A key of the process's own to probe writes with: written with a short expiry. */
  readonly probeKey: string;
  /**
   * Part of maxmemory (percent) kept for the workers: from `100 − reserve` % on, the web side
   * holds deliveries back. Absent: memory is not watched (a worker drains whatever it is).
   */
  readonly reservePercent?: number | undefined;
  /** How often the server is read while nothing is held. @defaultValue 1000 */
  readonly everyMs?: number;
}

/** Told of every change: the reason writes are held back for now, or undefined once they go. */
export type GateListener = (reason: HoldReason | undefined) => void;

/** How often a gate whose connection is not up yet looks again (no Redis call). */
const WAIT_FOR_CONNECTION_MS = 50;
/** Probes of a refusing Redis back off to this. */
const MAX_PROBE_MS = 5_000;
const READ_DEADLINE_MS = 1_000;
/** After an OOM, the share of maxmemory used memory must fall below for writes to go again. */
const OOM_CLEARS_BELOW = 0.98;

/**
 * The one place a process decides whether Redis can take its writes now, and says so once per
 * change of state: a Redis that refuses is a state that lasts, not an error per attempt. The web
 * side holds deliveries back (503) while the policy may evict or memory is in the workers'
 * reserve; every side holds back after a refusal, probing with backoff until a write goes
 * through, then resumes by itself.
 */
export class WriteGate {
  #reason: HoldReason | undefined;
  #detail = '';
  #timer: NodeJS.Timeout | undefined;
  #probeMs = 0;
  #stopped = false;
  readonly #listeners = new Set<GateListener>();
  /** The last reading of the server's memory (web side). */
  #last: RedisMemory | undefined;
  /** Bytes this process stored since that reading, at most. */
  #sinceRead = 0;
  /** Whether a reading the estimate asked for is under way. */
  #readingEarly = false;

  constructor(
    private readonly redis: RedisConnection,
    private readonly options: WriteGateOptions,
  ) {}

  /** Why writes are held back now; undefined while they go. */
  get holding(): HoldReason | undefined {
    return this.#reason;
  }

  /** A sentence for a 503's detail or a log line. */
  get detail(): string {
    return this.#detail;
  }

  /** Calls `listener` on every change of state until the returned function is called. */
  onChange(listener: GateListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Starts reading the server (web) and probing after refusals. */
  start(): this {
    this.#schedule(0);
    return this;
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  /**
   * Counts a write of at most `bytes` into the last reading, so that a burst between two
   * readings cannot carry memory past the reserve: once the estimate reaches it, the server is
   * read at once, not a second later. The verdict is the reading's: an estimate that holds
   * deliveries back itself, on bytes Redis does not hold, released them a reading later, and
   * the receivers' state (and log) flapped every second near the mark.
   */
  wrote(bytes: number): void {
    const last = this.#last;
    if (last === undefined || this.options.reservePercent === undefined) return;
    this.#sinceRead += bytes;
    if (this.#reason !== undefined || this.#readingEarly || !this.#pastReserve(last)) return;
    this.#readingEarly = true;
    this.#takeReading(false)
      .catch(() => undefined) // the next tick reads again
      .finally(() => {
        this.#readingEarly = false;
      });
  }

  /**
   * Takes an error a write met: true, and held back until a probe goes through, when it is a
   * refusal; false for any other error.
   */
  refused(error: unknown): boolean {
    const reason = refusalOf(error);
    if (reason === undefined) return false;
    const message = error instanceof Error ? error.message : String(error);
    if (this.#set(reason, `Redis refuses writes (${message.slice(0, 200)})`)) {
      this.#probeMs = 250;
      this.#schedule(this.#probeMs);
    }
    return true;
  }

  /** Sets the state; true when it changed. One log line per change. */
  #set(reason: HoldReason | undefined, detail: string): boolean {
    if (reason === this.#reason) return false;
    const { logger, name } = this.options;
    if (reason === undefined)
      logger.info({ part: name, was: this.#reason }, 'Redis takes writes again');
    else logger.warn({ part: name, reason }, `${detail}; holding writes back until it changes`);
    this.#reason = reason;
    this.#detail = detail;
    for (const listener of this.#listeners) listener(reason);
    return true;
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => void this.#tick(), ms);
    this.#timer.unref();
  }

  async #tick(): Promise<void> {
    // An outage is watch-redis.ts's to report; this waits for the connection, and reads the
    // server as soon as it is up (deliveries start then, not a reading later).
    if (this.redis.status !== 'ready') {
      this.#schedule(WAIT_FOR_CONNECTION_MS);
      return;
    }
    try {
      const refused = isRefusal(this.#reason);
      if (refused) await this.#probe(); // throws while Redis still refuses
      if (this.options.reservePercent !== undefined) await this.#takeReading(refused);
      else if (refused) this.#set(undefined, '');
    } catch (error: unknown) {
      // Still refusing: probe less often. Any other failure (a timeout, a dropped connection)
      // is tried again at the usual pace.
      if (refusalOf(error) !== undefined) this.#probeMs = Math.min(this.#probeMs * 2, MAX_PROBE_MS);
    } finally {
      this.#schedule(isRefusal(this.#reason) ? this.#probeMs : (this.options.everyMs ?? 1_000));
    }
  }

  /** Throws while Redis refuses; for `oom`, also while it is within 2 % of maxmemory. */
  async #probe(): Promise<void> {
    await withDeadline(
      this.redis.set(this.options.probeKey, '1', 'PX', 10_000),
      READ_DEADLINE_MS,
      'Redis',
    );
    if (this.#reason !== 'oom') return;
    // A write that fits just under maxmemory says little: the next one is refused again, and
    // the state would flap with every few bytes freed. Writes go again once there is room.
    const memory = await this.#read();
    if (memory.maxBytes > 0 && memory.usedBytes > memory.maxBytes * OOM_CLEARS_BELOW)
      throw new Error('OOM: used memory is still within 2 % of maxmemory');
  }

  /**
   * Reads the server and judges the reading; `probed`: a probe just went through, so a refusal
   * may end. A refusal met while the reading was under way stands until a probe goes through.
   */
  async #takeReading(probed: boolean): Promise<void> {
    const memory = await this.#read();
    this.#last = memory;
    this.#sinceRead = 0;
    if (probed || !isRefusal(this.#reason)) this.#judge(memory);
  }

  #read(): Promise<RedisMemory> {
    return withDeadline(readRedisMemory(this.redis), READ_DEADLINE_MS, 'INFO memory');
  }

  /** Whether a reading, with what was written since, reaches the reserve. */
  #pastReserve(memory: RedisMemory): boolean {
    const limit = memory.maxBytes * (1 - (this.options.reservePercent ?? 0) / 100);
    return memory.maxBytes > 0 && memory.usedBytes + this.#sinceRead >= limit;
  }

  /** The web side's verdict on a reading. */
  #judge(memory: RedisMemory): void {
    const reserve = this.options.reservePercent ?? 0;
    if (memory.policy !== 'noeviction') {
      this.#set('eviction_policy', policyProblem(memory.policy));
      return;
    }
    if (this.#pastReserve(memory)) {
      const percent = Math.round((memory.usedBytes / memory.maxBytes) * 100);
      this.#set(
        'memory_reserve',
        `Redis holds ${percent} % of its maxmemory; the last ${reserve} % is kept for the workers to drain the backlog (REDIS_MEMORY_RESERVE_PERCENT)`,
      );
      return;
    }
    this.#set(undefined, '');
  }
}
