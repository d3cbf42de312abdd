import { Job, type Queue } from 'bullmq';
import type { Logger } from 'pino';
import type { DestinationControl, DestinationStatus } from './destination-control.js';

/** How often each process reads every destination's shared state, drains and probes. */
export const TICK_MS = 1000;

/** A destination as this process last saw it, and until when it asked to be left alone. */
export interface SeenDestination extends DestinationStatus {
  /** Retry-After's end, by this process's clock (ms since the epoch); 0: not asked. */
  readonly waitUntil: number;
  /** When this process last learnt something of it by itself (a tick read earlier is older). */
  readonly notedAt: number;
}

/**
 * What a worker process knows of its destinations, read from Redis once a tick (TICK_MS) and
 * corrected at once by what its own sends learn: a send costs no extra Redis call while every
 * destination is active and was not asked to wait. A pause made by another process is seen here
 * within a tick. Each tick also does the process's share of the shared work: it promotes a
 * batch of the jobs held for a destination that is active again, and the probe of a destination
 * paused for failing.
 */
export class DestinationBoard {
  private readonly seen = new Map<string, SeenDestination>();
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private firstRead: Promise<void> | undefined;

  constructor(
    private readonly control: DestinationControl,
    private readonly queue: Queue,
    private readonly logger: Logger,
    private readonly reportError: (error: unknown, msg: string) => void,
  ) {}

  get(name: string): SeenDestination | undefined {
    return this.seen.get(name);
  }

  /** This process learnt something of a destination before the next tick (a pause, a resume). */
  note(name: string, change: Partial<SeenDestination>): void {
    const known = this.seen.get(name);
    if (known !== undefined) this.seen.set(name, { ...known, ...change, notedAt: Date.now() });
  }

  /** Reads every destination now, then once a tick. */
  start(): void {
    const read = () =>
      (this.ticking ??= this.tick()
        .catch((error: unknown) => {
          this.reportError(error, 'forward destinations not read');
        })
        .finally(() => (this.ticking = undefined)));
    this.firstRead = read();
    this.timer = setInterval(() => void read(), TICK_MS);
    this.timer.unref();
  }

  /** Resolves once the first read has ended, done or failed (then its destinations are unknown). */
  read(): Promise<void> {
    return this.firstRead ?? Promise.resolve();
  }

  /** One read of every destination; resolves once its promotions are done. */
  async tick(): Promise<void> {
    const readAt = Date.now();
    const results = await this.control.tick(true);
    const now = Date.now();
    for (const { status, probe, promote } of results) {
      const known = this.seen.get(status.name);
      // What this process learnt while the read was under way is newer than the read.
      const newer = known !== undefined && known.notedAt >= readAt;
      this.seen.set(
        status.name,
        newer
          ? { ...status, ...known, held: status.held }
          : { ...status, waitUntil: status.retryAfterMs + now, notedAt: 0 },
      );
      if (probe !== undefined) {
        this.logger.info({ destination: status.name, jobId: probe }, 'forward probe');
      }
      const ids = probe === undefined ? promote : [probe, ...promote];
      await Promise.all(ids.map((id) => this.promote(status.name, id)));
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.ticking;
  }

  /**
   * A held job back to the wait list (a drained one's id left the held set with the tick; a
   * probe's stays). One waiting is left alone (it runs). One gone or finished leaves the held
   * set, or it would be named the probe again and again while the destination stays paused. One
   * running goes back in it: its run may have been told to hold before the resume, and would
   * then sleep until HELD_RECHECK_MS (the soak's seed 3912 found 22 messages asleep so); the
   * next tick promotes it, and a run that sends releases it.
   */
  private async promote(name: string, id: string): Promise<void> {
    try {
      await new Job(this.queue, 'held', undefined, {}, id).promote();
    } catch {
      const state = await this.queue.getJobState(id);
      if (state === 'completed' || state === 'failed' || state === 'unknown') {
        await this.control.release(name, id);
      } else if (state === 'active') {
        await this.control.rehold(name, id);
      }
    }
  }
}
