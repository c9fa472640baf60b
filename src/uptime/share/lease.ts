/**
 * The prober's lease (SPEC 12 Replicas): one replica at a time probes and writes probe results.
 * The lease is one Redis key holding the holder's random token with a time to live: taken with
 * SET NX PX, renewed and released by the holder only while the key still holds its own token (a
 * script compares first), so a holder that paused past the time to live never renews or releases
 * the lease another replica has taken since.
 * Owns: the key and the token. Refuses: when to step (shared.ts), what the prober does (probe-loop.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';

const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`;
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

export class Lease {
  private readonly token = randomUUID();
  /** What the last step found; false after a failed command (the caller decides what that means). */
  held = false;

  constructor(
    private readonly client: Redis,
    private readonly key: string,
  ) {}

  /** Renews the lease if this replica holds it, else tries to take it; throws if Redis fails. */
  async step(ttlMs: number): Promise<boolean> {
    try {
      if (this.held) this.held = (await this.client.eval(RENEW, 1, this.key, this.token, ttlMs)) === 1;
      if (!this.held) this.held = (await this.client.set(this.key, this.token, 'PX', ttlMs, 'NX')) === 'OK';
    } catch (err) {
      this.held = false;
      throw err;
    }
    return this.held;
  }

  /** Lets go at once (a clean stop), so another replica takes over at its next step. */
  async release(): Promise<void> {
    // Even when the last step said no: a step still on its way may have taken it (the script compares).
    this.held = false;
    await this.client.eval(RELEASE, 1, this.key, this.token);
  }
}
