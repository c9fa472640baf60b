/**
 * Shared head state across replicas (SPEC 4.7), through the top-level `redis`. Each replica keeps,
 * in one Redis hash per chain, the highest head any replica saw for each upstream name (a max
 * updated by a Lua script, so it never goes down) and the fleet head. What another replica saw is
 * taken as an observation: an upstream another replica saw at N has N (Fleet.takeShared), so this
 * replica's fleet head and eth_blockNumber rise with it and reads for N go to nodes known to have
 * N. A rise is announced on a pub/sub channel at once; every `intervalMs` each replica also
 * publishes its heads and reads the hash.
 * Published before served: while Redis is usable, eth_blockNumber rises only to a fleet head the
 * hash already holds, so a client that reads N from this replica and asks another replica next
 * finds N announced there (the rise reached the other replica's subscription before this
 * replica's answer left). Redis down: the replica goes on with its own view
 * (logged by the connection, counted here) and sharing resumes when Redis is back. The way to
 * Redis (link, channel, timer, one exchange at a time) is the one every shared state takes
 * (shared-state.ts): the exchange is the max script, an announcement carries the maxes.
 * What Redis holds is input, not fact (anyone who can write to it can write anything): a value is
 * taken only when it is a height no further ahead than this replica's own nodes make possible
 * (Fleet.reach: the last head two of its nodes confirmed, plus the chain's pace and a slack); others
 * are refused and counted (switchyard_redis_values_refused_total{use="heads"}).
 */
import type { Metrics } from '../metrics/registry.js';
import type { Fleet } from '../upstream/fleet.js';
import type { Upstream } from '../upstream/node.js';
import type { SharedChannel, SharedRedis, SharedState } from './shared-state.js';

/**
 * KEYS[1] the hash; ARGV[1] its TTL in ms, then field/value pairs. Each field keeps the max of its
 * value and the one given; a stored value that is not a number (written by anything but this
 * script) counts as none and is replaced. Returns the given fields' values (field, value, ...) as
 * JSON, and publishes them on KEYS[2] when a field rose: only the fields asked about, so a hash
 * grown by anyone else costs nothing to read.
 */
const MAX_SCRIPT = `
local rose = false
local out = {}
for i = 2, #ARGV, 2 do
  local cur = tonumber(redis.call('HGET', KEYS[1], ARGV[i])) or -1
  local v = tonumber(ARGV[i + 1])
  if v > cur then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
    rose = true
    cur = v
  end
  out[#out + 1] = ARGV[i]
  out[#out + 1] = string.format('%d', cur)
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
local all = cjson.encode(out)
if rose then redis.call('PUBLISH', KEYS[2], all) end
return all
`;

/** A shared head as Redis holds it: decimal digits of a safe integer, nothing else. */
const HEIGHT = /^(?:0|[1-9][0-9]{0,14})$/;
/** A message or answer longer than this is not one this code wrote (two fields per upstream). */
const MAX_TEXT = 64 * 1024;

export class SharedHeads implements SharedState {
  private readonly shared: SharedChannel;
  private closed = false;
  /** The shared max per upstream name, as last read. */
  private readonly known = new Map<string, number>();
  /** The fleet head shared by all replicas (-1 until read). */
  sharedHead = -1;
  private readonly onHead = (u: Upstream): void => {
    if (u.head > (this.known.get(u.name) ?? -1)) void this.shared.sync();
  };

  constructor(
    redis: SharedRedis,
    private readonly fleet: Fleet,
    private readonly metrics: Metrics,
    private readonly intervalMs: number,
  ) {
    metrics.declareSharedHeads();
    // Back after an outage: exchange at once rather than at the next tick (the channel does).
    this.shared = redis.open(
      {
        key: 'heads',
        channel: ':rose',
        use: 'shared heads',
        whileDown: "heads are this replica's own view",
        everyMs: intervalMs,
      },
      this,
    );
  }

  start(): void {
    this.shared.start();
    this.fleet.on('upstream-head', this.onHead);
    this.fleet.capServedHead(() =>
      this.shared.usable && this.sharedHead >= 0 ? this.sharedHead : Number.POSITIVE_INFINITY,
    );
  }

  /** Sends this replica's heads, takes the merged maxes back (shared-state.ts runs one at a time). */
  async exchange(): Promise<boolean> {
    if (this.closed || !this.shared.usable) return false;
    const args: (string | number)[] = [this.intervalMs * 20];
    for (const u of this.fleet.upstreams) if (u.available && !u.shadow && u.head >= 0) args.push(`u:${u.name}`, u.head);
    if (this.fleet.head >= 0) args.push('fleet', this.fleet.head);
    let text: unknown;
    try {
      text = await this.shared.client.eval(MAX_SCRIPT, 2, this.shared.key(), this.shared.key(':rose'), ...args);
    } catch {
      this.metrics.recordSharedHeadsFailure();
      this.shared.note(false);
      return false;
    }
    this.shared.note(true);
    if (!this.closed) this.apply(String(text));
    return true;
  }

  /** Another replica's rise: the maxes it announced. */
  heard(message: string): void {
    this.apply(message);
  }

  /**
   * Takes the shared maxes as observations: an upstream another replica saw at N has N. Redis is
   * input like any node: a value that is not a height, or is beyond what this replica's own nodes
   * make possible (Fleet.takeShared), is refused and counted, never taken.
   */
  private apply(text: string): void {
    if (text.length > MAX_TEXT) {
      this.metrics.recordRedisRefused('heads');
      return;
    }
    let flat: unknown;
    try {
      flat = JSON.parse(text);
    } catch {
      this.metrics.recordRedisRefused('heads');
      return;
    }
    if (!Array.isArray(flat)) return;
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const field = flat[i];
      const value = flat[i + 1];
      if (typeof field !== 'string') continue;
      const u = field.startsWith('u:') ? this.fleet.upstreams.find((x) => x.name === field.slice(2)) : undefined;
      // Only this replica's own fields: names it has no upstream of are no concern of it.
      if (field !== 'fleet' && u === undefined) continue;
      const n = typeof value === 'string' && HEIGHT.test(value) ? Number(value) : Number.NaN;
      const reach = this.fleet.reach();
      if (!Number.isSafeInteger(n) || n > reach) this.metrics.recordRedisRefused('heads');
      if (!Number.isSafeInteger(n)) continue;
      if (u === undefined) {
        // The hash holds at least what this replica can believe: eth_blockNumber is not held below
        // it (the cap serves only to rise no faster than the other replicas can know).
        this.sharedHead = Math.max(this.sharedHead, Math.min(n, Math.floor(reach)));
        continue;
      }
      if (n > reach) continue;
      this.known.set(u.name, Math.max(this.known.get(u.name) ?? -1, n));
      if (n <= u.head) continue;
      if (this.fleet.takeShared(u, n) && u.head >= n) this.metrics.recordSharedHeadsTaken();
    }
  }

  async close(): Promise<void> {
    // An exchange in flight may still settle: closed keeps it from touching the fleet or starting another.
    this.closed = true;
    this.fleet.capServedHead(null);
    this.fleet.off('upstream-head', this.onHead);
    this.shared.close();
  }
}
