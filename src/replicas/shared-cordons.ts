/**
 * Cordons shared by every replica (SPEC 4.8), through the top-level `redis`: one hash per chain,
 * field = upstream name, value = `{"reason", "at"}` as JSON, never expiring, so a cordon survives
 * restarts of every replica. A write is announced on a pub/sub channel and every replica reads the
 * hash again at once; each also reads it every READ_EVERY_MS, the safety net for a message missed
 * while its subscription was reconnecting. So a cordon reaches every replica well within 2 s.
 * Redis down: a write is refused (the admin route answers 503: a cordon this replica alone kept
 * would be undone by the next read once Redis is back), and the replica keeps the set it last read.
 * What Redis holds is input: a field that is not an upstream name or a value that is not a cordon
 * is refused and counted (switchyard_redis_values_refused_total{use="cordons"}); the read script
 * returns at most MAX_FIELDS fields of bounded size, so a hash grown by anyone else costs little.
 */
import type { ChainableCommander, Redis } from 'ioredis';
import type { Metrics } from '../metrics/registry.js';
import type { RedisConnections, RedisLink } from '../redis/connections.js';
import { cordonText, parseCordon, UPSTREAM_NAME, type Cordon, type CordonKeeper } from '../upstream/cordons.js';

/** The safety-net read: a cordon missed on pub/sub is seen within this long. */
export const READ_EVERY_MS = 1_000;
const MAX_FIELDS = 64;
const MAX_VALUE = 1_024;

/**
 * KEYS[1] the hash; ARGV[1] MAX_FIELDS, ARGV[2] MAX_VALUE, then the configured names. Every field
 * when there are at most MAX_FIELDS, else only the configured names; fields or values too long are
 * left out. Returns { left out, field, value, field, value, ... }.
 */
const READ_SCRIPT = `
local names
if redis.call('HLEN', KEYS[1]) <= tonumber(ARGV[1]) then names = redis.call('HKEYS', KEYS[1])
else names = {} for i = 3, #ARGV do names[#names + 1] = ARGV[i] end end
local out = {0}
for _, f in ipairs(names) do
  if #f <= 64 and redis.call('HSTRLEN', KEYS[1], f) <= tonumber(ARGV[2]) then
    local v = redis.call('HGET', KEYS[1], f)
    if v then out[#out + 1] = f; out[#out + 1] = v end
  elseif redis.call('HEXISTS', KEYS[1], f) == 1 then out[1] = out[1] + 1 end
end
return out
`;

export class SharedCordons implements CordonKeeper {
  readonly keptIn = 'redis';
  private readonly link: RedisLink;
  private readonly sub: Redis;
  private readonly key: string;
  private readonly channel: string;
  private timer: NodeJS.Timeout | null = null;
  private seen: ((all: ReadonlyMap<string, Cordon>) => void) | null = null;
  private reading: Promise<boolean> | null = null;
  private again = false;
  private readonly onMessage = (channel: string): void => {
    if (channel === this.channel) void this.read();
  };

  constructor(
    connections: RedisConnections,
    url: string,
    chainId: number,
    private readonly names: () => readonly string[],
    private readonly metrics: Metrics,
  ) {
    this.key = `switchyard:${chainId}:cordons`;
    this.channel = `switchyard:${chainId}:cordons:changed`;
    this.link = connections.link(url, {
      name: 'cordons',
      whileDown: 'cordons stay as last read and cannot be changed',
      onUp: () => void this.read(),
    });
    this.sub = this.link.subscriber();
    this.sub.on('message', this.onMessage);
  }

  /** Subscribes and reads; resolves after the first read, or after 2 s without Redis (then the timer keeps trying). */
  async start(seen: (all: ReadonlyMap<string, Cordon>) => void): Promise<void> {
    this.seen = seen;
    void this.sub.subscribe(this.channel).catch(() => undefined);
    this.timer = setInterval(() => void this.read(), READ_EVERY_MS);
    this.timer.unref();
    const deadline = Date.now() + 2_000;
    while (!(await this.read()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  }

  async put(name: string, c: Cordon): Promise<void> {
    await this.write((m) => m.hset(this.key, name, cordonText(c)));
  }

  async drop(name: string): Promise<void> {
    await this.write((m) => m.hdel(this.key, name));
  }

  /** One MULTI: the change and its announcement (this replica hears it too, and reads the hash again). */
  private async write(change: (m: ChainableCommander) => unknown): Promise<void> {
    if (!this.link.usable) throw new Error('redis unreachable');
    const m = this.link.client.multi();
    change(m);
    m.publish(this.channel, 'changed');
    try {
      const results = await m.exec();
      if (results === null || results.some(([err]) => err !== null)) throw new Error('redis refused the write');
      this.link.note(true);
    } catch (err) {
      this.link.note(false);
      throw err;
    }
  }

  /** Reads the hash and hands the set to `seen` (coalesced: one read at a time, another after it if asked). True when read. */
  private read(): Promise<boolean> {
    if (this.reading !== null) {
      this.again = true;
      return this.reading;
    }
    this.reading = this.readOnce().finally(() => {
      this.reading = null;
      if (this.again) {
        this.again = false;
        void this.read();
      }
    });
    return this.reading;
  }

  private async readOnce(): Promise<boolean> {
    if (!this.link.usable || this.seen === null) return false;
    let flat: unknown;
    try {
      flat = await this.link.client.eval(READ_SCRIPT, 1, this.key, MAX_FIELDS, MAX_VALUE, ...this.names());
      this.link.note(true);
    } catch {
      this.link.note(false);
      return false;
    }
    // close() may have run while the script was in flight: then the answer has no one to go to.
    if (this.seen === null) return false;
    this.seen(this.parse(flat));
    return true;
  }

  /** The script's answer as cordons; what is not one is refused and counted. */
  private parse(flat: unknown): Map<string, Cordon> {
    const out = new Map<string, Cordon>();
    if (!Array.isArray(flat)) return out;
    const leftOut = Number(flat[0]);
    for (let i = 0; i < leftOut && i < MAX_FIELDS; i++) this.metrics.recordRedisRefused('cordons');
    for (let i = 1; i + 1 < flat.length; i += 2) {
      const name = flat[i];
      const value = flat[i + 1];
      const c = typeof value === 'string' ? parseCordon(value) : null;
      if (typeof name !== 'string' || !UPSTREAM_NAME.test(name) || c === null) {
        this.metrics.recordRedisRefused('cordons');
        continue;
      }
      out.set(name, c);
    }
    return out;
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.seen = null;
    this.sub.off('message', this.onMessage);
    void this.sub.unsubscribe(this.channel).catch(() => undefined);
    this.link.release();
  }
}
