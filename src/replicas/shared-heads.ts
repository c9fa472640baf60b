/**
 * Shared head state across replicas (SPEC 4.7), through the top-level `redis`. Each replica keeps,
 * in one Redis hash per chain, the highest head any replica saw for each upstream name (a max
 * updated by a Lua script, so it never goes down) and the fleet head. What another replica saw is
 * taken as an observation: an upstream another replica saw at N has N (Fleet.proveBlock), so this
 * replica's fleet head and eth_blockNumber rise with it and reads for N go to nodes known to have
 * N. A rise is announced on a pub/sub channel at once; every `intervalMs` each replica also
 * publishes its heads and reads the hash. Redis down: the replica goes on with its own view
 * (logged, counted) and sharing resumes when Redis is back.
 */
import { Redis } from 'ioredis';
import { Counter, Gauge } from 'prom-client';
import type { Logger } from 'pino';
import type { Metrics } from '../metrics/registry.js';
import type { Fleet } from '../upstream/fleet.js';
import type { Upstream } from '../upstream/node.js';

/**
 * KEYS[1] the hash; ARGV[1] its TTL in ms, then field/value pairs. Each field keeps the max of its
 * value and the one given. Returns the whole hash as JSON, and publishes it on KEYS[2] when a field rose.
 */
const MAX_SCRIPT = `
local rose = false
for i = 2, #ARGV, 2 do
  local cur = tonumber(redis.call('HGET', KEYS[1], ARGV[i]) or '-1')
  local v = tonumber(ARGV[i + 1])
  if v > cur then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
    rose = true
  end
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
local all = cjson.encode(redis.call('HGETALL', KEYS[1]))
if rose then redis.call('PUBLISH', KEYS[2], all) end
return all
`;

const OPTIONS = { enableOfflineQueue: false, maxRetriesPerRequest: 0, commandTimeout: 500, connectTimeout: 2_000, retryStrategy: (n: number) => Math.min(n * 200, 2_000) };

export class SharedHeads {
  private readonly client: Redis;
  private readonly sub: Redis;
  private readonly key: string;
  private readonly channel: string;
  private timer: NodeJS.Timeout | null = null;
  private publishing = false;
  private again = false;
  private up = false;
  /** The shared max per upstream name, as last read. */
  private readonly known = new Map<string, number>();
  /** The fleet head shared by all replicas (-1 until read). */
  sharedHead = -1;
  private readonly upGauge: Gauge;
  private readonly failures: Counter;
  private readonly onHead = (u: Upstream): void => {
    if (u.head > (this.known.get(u.name) ?? -1)) this.publish();
  };

  constructor(
    url: string,
    chainId: number,
    private readonly fleet: Fleet,
    metrics: Metrics,
    private readonly log: Logger,
    private readonly intervalMs: number,
  ) {
    this.key = `switchyard:${chainId}:heads`;
    this.channel = `switchyard:${chainId}:heads:rose`;
    this.upGauge = new Gauge({ name: 'switchyard_redis_up', help: '1 while the shared-heads Redis (top-level redis) is reachable', registers: [metrics.registry] });
    this.failures = new Counter({
      name: 'switchyard_shared_heads_failures_total',
      help: 'Shared-head exchanges with Redis that failed (the replica went on with its own view)',
      registers: [metrics.registry],
    });
    this.client = new Redis(url, OPTIONS);
    this.sub = new Redis(url, { ...OPTIONS, enableOfflineQueue: true });
    this.client.on('ready', () => this.note(true));
    this.client.on('error', () => this.note(false));
    this.client.on('close', () => this.note(false));
    this.sub.on('error', () => undefined);
    this.sub.on('message', (_channel: string, text: string) => this.apply(text));
  }

  start(): void {
    void this.sub.subscribe(this.channel).catch(() => undefined);
    this.fleet.on('upstream-head', this.onHead);
    this.timer = setInterval(() => this.publish(), this.intervalMs);
    this.timer.unref();
  }

  private note(up: boolean): void {
    if (up === this.up) return;
    this.up = up;
    this.upGauge.set(up ? 1 : 0);
    if (up) this.log.info('redis reachable: heads shared with the other replicas');
    else this.log.warn("redis unreachable: heads are this replica's own view until it is back");
    if (up) this.publish();
  }

  /** Sends this replica's heads, takes the merged maxes back (coalesced: one exchange at a time). */
  private publish(): void {
    if (this.client.status !== 'ready') return;
    if (this.publishing) {
      this.again = true;
      return;
    }
    this.publishing = true;
    const args: (string | number)[] = [this.intervalMs * 20];
    for (const u of this.fleet.upstreams) if (u.available && u.head >= 0) args.push(`u:${u.name}`, u.head);
    if (this.fleet.head >= 0) args.push('fleet', this.fleet.head);
    this.client
      .eval(MAX_SCRIPT, 2, this.key, this.channel, ...args)
      .then((text) => this.apply(String(text)))
      .catch(() => this.failures.inc())
      .finally(() => {
        this.publishing = false;
        if (this.again) {
          this.again = false;
          this.publish();
        }
      });
  }

  /** Takes the shared maxes as observations: an upstream another replica saw at N has N. */
  private apply(text: string): void {
    let flat: unknown;
    try {
      flat = JSON.parse(text);
    } catch {
      return;
    }
    if (!Array.isArray(flat)) return;
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const field = String(flat[i]);
      const n = Number(flat[i + 1]);
      if (!Number.isSafeInteger(n)) continue;
      if (field === 'fleet') {
        this.sharedHead = Math.max(this.sharedHead, n);
        continue;
      }
      if (!field.startsWith('u:')) continue;
      const name = field.slice(2);
      this.known.set(name, Math.max(this.known.get(name) ?? -1, n));
      const u = this.fleet.upstreams.find((x) => x.name === name);
      if (u !== undefined && n > u.head) this.fleet.proveBlock(u, n);
    }
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.fleet.off('upstream-head', this.onHead);
    this.client.disconnect();
    this.sub.disconnect();
  }
}
