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
 * The way to Redis is the one every shared state takes (shared-state.ts): the exchange is the
 * read, an announcement says only "changed".
 */
import type { ChainableCommander } from 'ioredis';
import type { Metrics } from '../metrics/registry.js';
import { cordonText, parseCordon, UPSTREAM_NAME, type Cordon, type CordonKeeper } from '../upstream/cordons.js';
import type { SharedChannel, SharedRedis, SharedState } from './shared-state.js';

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

export class SharedCordons implements CordonKeeper, SharedState {
  readonly keptIn = 'redis';
  private readonly shared: SharedChannel;
  private seen: ((all: ReadonlyMap<string, Cordon>) => void) | null = null;

  constructor(
    redis: SharedRedis,
    private readonly names: () => readonly string[],
    private readonly metrics: Metrics,
  ) {
    this.shared = redis.open(
      {
        key: 'cordons',
        channel: ':changed',
        use: 'cordons',
        whileDown: 'cordons stay as last read and cannot be changed',
        everyMs: READ_EVERY_MS,
      },
      this,
    );
  }

  /** Subscribes and reads; resolves after the first read, or after 2 s without Redis (then the timer keeps trying). */
  async start(seen: (all: ReadonlyMap<string, Cordon>) => void): Promise<void> {
    this.seen = seen;
    this.shared.start();
    const deadline = Date.now() + 2_000;
    while (!(await this.shared.sync()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  }

  async put(name: string, c: Cordon): Promise<void> {
    await this.write((m) => m.hset(this.shared.key(), name, cordonText(c)));
  }

  async drop(name: string): Promise<void> {
    await this.write((m) => m.hdel(this.shared.key(), name));
  }

  /** One MULTI: the change and its announcement (this replica hears it too, and reads the hash again). */
  private async write(change: (m: ChainableCommander) => unknown): Promise<void> {
    if (!this.shared.usable) throw new Error('redis unreachable');
    const m = this.shared.client.multi();
    change(m);
    m.publish(this.shared.key(':changed'), 'changed');
    try {
      const results = await m.exec();
      if (results === null || results.some(([err]) => err !== null)) throw new Error('redis refused the write');
      this.shared.note(true);
    } catch (err) {
      this.shared.note(false);
      throw err;
    }
  }

  /** Reads the hash and hands the set to `seen`. True when read. */
  async exchange(): Promise<boolean> {
    if (!this.shared.usable || this.seen === null) return false;
    let flat: unknown;
    try {
      flat = await this.shared.client.eval(READ_SCRIPT, 1, this.shared.key(), MAX_FIELDS, MAX_VALUE, ...this.names());
      this.shared.note(true);
    } catch {
      this.shared.note(false);
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
    this.seen = null;
    this.shared.close();
  }
}
