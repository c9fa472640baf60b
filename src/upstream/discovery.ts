/**
 * Discovery (SPEC 4.8, upstreams[].discover): what each node can serve, found by asking it.
 *   - its earliest block with state: eth_getBalance of the zero address at 0 (an answer there: an
 *     archive node), else a binary search between 0 and its head, at most
 *     ceil(log2(head + 1)) + 2 probes;
 *   - whether it serves debug methods: debug_traceBlockByNumber of its head block (call tracer,
 *     top call only, so the answer stays small) answered with a result.
 * A node is probed once it is first healthy, again every routing.discoverIntervalMs, and whenever
 * it comes back from an outage (healthy with a closed breaker after it was not), at most once per
 * COMEBACK_GAP_MS. What a configured tag already says is not probed (the tag wins).
 * A node that answers what a node with state cannot (no state at its own head, a result that is
 * not a balance) or whose probe fails (timeout, transport, "too many requests") gets no bound:
 * unknown, so it is sent every read as before; a wrong bound could only ever exclude that node.
 * Probes go to the node through its own client as the fleet's polls do: one at a time per node,
 * each within routing.upstreamTimeoutMs; never counted as client calls
 * (switchyard_upstream_calls_total), no budget token taken, the breaker untouched. A held-off node
 * is not probed until its hold-off ends; a "too many requests" answer to a probe holds it off as
 * any answer does.
 * Owns: when to probe, the probes, reading their answers. Refuses: what routing makes of the
 * findings (serving.ts, routing/select.ts).
 */
import type { Logger } from 'pino';
import { toQuantity } from '../jsonrpc/hex.js';
import type { Fleet } from './fleet.js';
import type { Upstream } from './node.js';
import type { Findings } from './serving.js';
import type { Config } from '../config/schema.js';

export interface DiscoverySettings {
  /** routing.discoverIntervalMs. */
  intervalMs: number;
  /** routing.upstreamTimeoutMs: each probe's limit. */
  timeoutMs: number;
}

export function discoverySettings(config: Config): DiscoverySettings {
  return { intervalMs: config.routing.discoverIntervalMs, timeoutMs: config.routing.upstreamTimeoutMs };
}

/** How often nodes are looked at for a run that is due. */
export const DISCOVERY_TICK_MS = 1_000;
/** A node that keeps coming and going is probed again at most this often. */
export const COMEBACK_GAP_MS = 5_000;

const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000';
/** A balance: a quantity of at most 256 bits. */
const BALANCE = /^"0x[0-9a-fA-F]{1,64}"$/;
/** The fleet's own calls: the breaker is left alone (client.ts). */
const PROBE = { probe: true } as const;
/** A trace may be slow: sent alone, and the node's late polls meanwhile are not held against it (probe.ts). */
const TRACE = { probe: true, expensive: true } as const;

type StateAt = 'has' | 'lacks' | 'unknown';

/** What discovery keeps per node: not the findings (those are the node's: serving.ts), only when to run. */
interface Watch {
  /** Healthy with a closed breaker at the last look. */
  up: boolean;
  /** It came (back) since the last run: a run is due once COMEBACK_GAP_MS after the last one passed. */
  cameBack: boolean;
  running: boolean;
  /** When the last run started (fleet clock); -Infinity before the first. */
  startedAt: number;
}

export class Discovery {
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private readonly watches = new WeakMap<Upstream, Watch>();

  constructor(
    private readonly fleet: Fleet,
    private settings: DiscoverySettings,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** A reload's settings: the next look and the next run read them. */
  apply(settings: DiscoverySettings): void {
    this.settings = settings;
  }

  start(): void {
    this.fleet.on('upstream-state', this.stateChanged);
    const tick = (): void => {
      if (this.stopped) return;
      this.look();
      this.timer = setTimeout(tick, DISCOVERY_TICK_MS);
    };
    tick();
  }

  /**
   * No run starts after this. A probe in flight is not waited for (it ends with the node's client,
   * closed by the fleet); what it answers is then dropped unread.
   */
  stop(): void {
    this.stopped = true;
    this.fleet.off('upstream-state', this.stateChanged);
    if (this.timer !== null) clearTimeout(this.timer);
  }

  /** A node that leaves `healthy` is seen to, however short its outage: its return is a comeback. */
  private readonly stateChanged = (u: Upstream): void => {
    const w = this.watches.get(u);
    if (w !== undefined && u.state !== 'healthy') w.up = false;
  };

  /** Starts the runs that are due: a node first healthy or back, or one whose interval passed. */
  private look(): void {
    const now = this.now();
    const { intervalMs } = this.settings;
    for (const u of this.fleet.upstreams) {
      if (!u.config.discover) continue;
      let w = this.watches.get(u);
      if (w === undefined) {
        w = { up: false, cameBack: false, running: false, startedAt: Number.NEGATIVE_INFINITY };
        this.watches.set(u, w);
      }
      const up = u.state === 'healthy' && !u.retiring && u.breaker.state === 'closed';
      if (up && !w.up) w.cameBack = true;
      w.up = up;
      if (!up || w.running || u.heldOff || u.head < 0) continue;
      const since = now - w.startedAt;
      if ((w.cameBack && since >= COMEBACK_GAP_MS) || since >= intervalMs) this.begin(u, w, now);
    }
  }

  private begin(u: Upstream, w: Watch, now: number): void {
    w.running = true;
    w.cameBack = false;
    w.startedAt = now;
    this.discover(u).then(
      () => void (w.running = false),
      (err: unknown) => {
        w.running = false;
        this.log.error({ upstream: u.name, err }, 'discovery crashed');
      },
    );
  }

  /** One run: the probes a configured tag does not make needless, then the findings, logged. */
  async discover(u: Upstream): Promise<Findings | null> {
    const { timeoutMs } = this.settings;
    const earliest = u.tags.has('archive') ? null : await earliestWithState(u, timeoutMs, () => this.stopped);
    // A node that began holding off during the search is not traced meanwhile.
    const debug = u.tags.has('debug') || u.heldOff ? false : await servesDebug(u, timeoutMs);
    if (this.stopped) return null;
    const found: Findings = { earliest, debug };
    u.serving.discovered(found, this.now());
    this.log.info(
      { upstream: u.name, earliestBlock: u.earliestBlock, archive: u.can('archive'), debug: u.can('debug') },
      'upstream discovered: what it can serve',
    );
    return found;
  }
}

/** Whether the node has the state at block n: a balance there, or an error saying it has not. */
async function stateAt(u: Upstream, n: number, timeoutMs: number): Promise<StateAt> {
  const { verdict } = await u.call('eth_getBalance', `["${ZERO_ADDRESS}","${toQuantity(n)}"]`, timeoutMs, PROBE);
  if (verdict.kind === 'result')
    return typeof verdict.result === 'string' && BALANCE.test(verdict.result) ? 'has' : 'unknown';
  // Nodes say "no state here" in their own words and codes (anvil -32602 BlockOutOfRange, geth
  // -32000 missing trie node...): any error answer is read so, and the probe at the head checks
  // that the node does answer where it must have state.
  if (verdict.kind === 'node-error') return 'lacks';
  return verdict.reason === 'node_missing_block' || verdict.reason === 'node_method_missing' ? 'lacks' : 'unknown';
}

/**
 * The earliest block the node has the state of, and its head once that was found; null when
 * unknown. Lacking at lo and having at hi hold throughout the search, so each probe halves the
 * gap; a node contradicting itself can only narrow its own window.
 */
export async function earliestWithState(
  u: Upstream,
  timeoutMs: number,
  stopped: () => boolean = () => false,
): Promise<{ block: number; atHead: number } | null> {
  const head = u.head;
  if (head < 0) return null;
  const atZero = await stateAt(u, 0, timeoutMs);
  if (atZero === 'has') return { block: 0, atHead: head };
  if (atZero === 'unknown' || head === 0 || stopped()) return null;
  if ((await stateAt(u, head, timeoutMs)) !== 'has') return null;
  let lo = 0;
  let hi = head;
  let probes = Math.ceil(Math.log2(head + 1));
  while (hi - lo > 1) {
    if (probes-- <= 0 || stopped()) return null;
    const mid = lo + Math.floor((hi - lo) / 2);
    const at = await stateAt(u, mid, timeoutMs);
    if (at === 'unknown') return null;
    if (at === 'has') hi = mid;
    else lo = mid;
  }
  // The window is measured against its head once the search ended, so it is no narrower than the
  // node's own (but for blocks its head poll has not seen yet): the bound passes no block it has.
  return { block: hi, atHead: Math.max(u.head, head) };
}

/** Whether the node traced its head block: a result, a JSON array of traces. */
export async function servesDebug(u: Upstream, timeoutMs: number): Promise<boolean> {
  if (u.head < 0) return false;
  const params = `["${toQuantity(u.head)}",{"tracer":"callTracer","tracerConfig":{"onlyTopCall":true}}]`;
  const { verdict } = await u.call('debug_traceBlockByNumber', params, timeoutMs, TRACE);
  if (verdict.kind !== 'result') return false;
  const r = verdict.result;
  return typeof r === 'string' ? r.trimStart().startsWith('[') : r.startsWith(0x5b);
}
