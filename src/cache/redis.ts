/**
 * The optional shared second level (cache.redis): immutable entries only, so replicas share
 * finalized data. Redis is a helper, never a dependency: while it is unreachable (or for a second
 * after a failed command) every operation is skipped at once and counted; clients see no difference.
 * The connection is the process's shared one for that URL (redis/connections.ts).
 */
import type { RedisLink } from '../redis/connections.js';

const KEY_PREFIX = 'switchyard:cache:';
/** Finalized data never changes; the TTL only lets Redis forget what nobody asks for. */
const TTL_SECONDS = 7 * 24 * 3600;

export class RedisLevel {
  errors = 0;
  private readonly prefix: string;

  /** `chainId` goes into every key: an entry of one chain is never an answer for another. */
  constructor(
    private readonly link: RedisLink,
    chainId?: number,
  ) {
    this.prefix = chainId === undefined ? KEY_PREFIX : `${KEY_PREFIX}${chainId}:`;
  }

  /** Reachable, as last seen (switchyard_cache_redis_up). */
  get ready(): boolean {
    return this.link.up;
  }

  async get(key: string): Promise<string | undefined> {
    if (!this.link.usable) return undefined;
    try {
      const value = await this.link.client.get(this.prefix + key);
      this.link.note(true);
      return value ?? undefined;
    } catch {
      this.failed();
      return undefined;
    }
  }

  set(key: string, value: string): void {
    if (!this.link.usable) return;
    this.link.client.set(this.prefix + key, value, 'EX', TTL_SECONDS).then(
      () => this.link.note(true),
      () => this.failed(),
    );
  }

  private failed(): void {
    this.errors++;
    this.link.note(false);
  }

  async close(): Promise<void> {
    this.link.release();
  }
}
