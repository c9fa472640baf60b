/**
 * The optional shared second level (cache.redis): immutable entries only, so replicas share
 * finalized data. Redis is a helper, never a dependency: while it is unreachable every operation
 * is skipped at once (no queueing, short command timeout) and counted; clients see no difference.
 */
import { Redis } from 'ioredis';
import type { Logger } from 'pino';

const KEY_PREFIX = 'switchyard:cache:';
/** Finalized data never changes; the TTL only lets Redis forget what nobody asks for. */
const TTL_SECONDS = 7 * 24 * 3600;
const COMMAND_TIMEOUT_MS = 100;

export class RedisLevel {
  private readonly client: Redis;
  errors = 0;
  private down = false;
  private readonly prefix: string;

  /** `chainId` goes into every key: an entry of one chain is never an answer for another. */
  constructor(
    url: string,
    private readonly log: Logger,
    chainId?: number,
  ) {
    this.prefix = chainId === undefined ? KEY_PREFIX : `${KEY_PREFIX}${chainId}:`;
    this.client = new Redis(url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: COMMAND_TIMEOUT_MS,
      connectTimeout: 2_000,
      lazyConnect: false,
      retryStrategy: (times) => Math.min(times * 200, 2_000),
    });
    this.client.on('error', () => this.markDown());
    this.client.on('ready', () => {
      if (this.down) this.log.info('cache redis reachable again');
      this.down = false;
    });
  }

  private markDown(): void {
    if (!this.down) this.log.warn('cache redis unreachable: memory cache only until it is back');
    this.down = true;
  }

  get ready(): boolean {
    return this.client.status === 'ready';
  }

  async get(key: string): Promise<string | undefined> {
    if (!this.ready) return undefined;
    try {
      return (await this.client.get(this.prefix + key)) ?? undefined;
    } catch {
      this.errors++;
      return undefined;
    }
  }

  set(key: string, value: string): void {
    if (!this.ready) return;
    this.client.set(this.prefix + key, value, 'EX', TTL_SECONDS).catch(() => {
      this.errors++;
    });
  }

  async close(): Promise<void> {
    this.client.disconnect();
  }
}
