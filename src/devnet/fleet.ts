/**
 * The devnet fleet: starts the anvil nodes, picks the leader for each block, keeps every other node
 * where its mode says (following, k blocks behind, stalled), and serializes everything that changes
 * the chain so the timer, mine() and the fault controls never interleave. How a block is copied
 * between nodes lives in replicate.ts; the HTTP control API in control.ts.
 */
import { pino, type Logger } from 'pino';
import { Agent } from 'undici';
import { DevnetChain, type RpcBlockHeader, recordFromHeader } from './chain.js';
import { startControlServer, type ControlServer } from './control.js';
import { DevnetNode } from './node.js';
import { type ReplicaContext, produceBlock, syncNode } from './replicate.js';
import type { Devnet, DevnetNodeInfo, DevnetOptions } from './types.js';

type Mode = { kind: 'follow' } | { kind: 'lag'; blocks: number } | { kind: 'stall' };

interface Member {
  node: DevnetNode;
  mode: Mode;
  head: number;
  /** Being restarted: a tick neither leads with it nor syncs it until restart() hands it over. */
  restarting: boolean;
}

const FOLLOW: Mode = { kind: 'follow' };
const MAX_MINE_COUNT = 10_000;

function check(ok: boolean, key: string, expected: string, got: unknown): void {
  if (!ok) throw new TypeError(`devnet ${key}: expected ${expected}, got ${JSON.stringify(got)}`);
}
const isInt = (v: unknown, min: number, max = Number.MAX_SAFE_INTEGER): boolean =>
  typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;

function validate(o: DevnetOptions): void {
  check(isInt(o.nodes, 1, 64), 'nodes', 'an integer from 1 to 64', o.nodes);
  check(isInt(o.chainId, 1), 'chainId', 'a positive integer', o.chainId);
  check(
    typeof o.blockTimeMs === 'number' && Number.isFinite(o.blockTimeMs) && o.blockTimeMs >= 0,
    'blockTimeMs',
    'a number >= 0',
    o.blockTimeMs,
  );
  check(
    o.basePort === undefined || isInt(o.basePort, 0, 65535 - o.nodes + 1),
    'basePort',
    'a port leaving room for every node',
    o.basePort,
  );
  check(
    o.controlPort === undefined || isInt(o.controlPort, 0, 65535),
    'controlPort',
    'a port from 0 to 65535',
    o.controlPort,
  );
  check(
    o.slotsInAnEpoch === undefined || isInt(o.slotsInAnEpoch, 1),
    'slotsInAnEpoch',
    'a positive integer',
    o.slotsInAnEpoch,
  );
  check(
    o.genesisTimestamp === undefined || isInt(o.genesisTimestamp, 0),
    'genesisTimestamp',
    'an integer >= 0',
    o.genesisTimestamp,
  );
  check(
    o.host === undefined || (typeof o.host === 'string' && o.host.length > 0),
    'host',
    'a host name or address',
    o.host,
  );
}

class DevnetFleet implements Devnet {
  readonly chainId: number;
  controlUrl: string | null = null;
  private readonly members: Member[];
  private readonly ctx: ReplicaContext;
  private readonly agent: Agent;
  private readonly blockTimeMs: number;
  private readonly log: Logger;
  private queue: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;
  private control: ControlServer | null = null;
  private stopping: Promise<void> | null = null;

  constructor(opts: DevnetOptions, nodes: DevnetNode[], chain: DevnetChain, agent: Agent, log: Logger) {
    this.chainId = opts.chainId;
    this.blockTimeMs = opts.blockTimeMs;
    this.members = nodes.map((node) => ({ node, mode: FOLLOW, head: 0, restarting: false }));
    this.ctx = { chain, strays: new Map(), logger: log };
    this.agent = agent;
    this.log = log;
  }

  async listen(host: string, port: number): Promise<void> {
    this.control = await startControlServer(this, host, port, this.log);
    this.controlUrl = this.control.url;
  }

  nodes(): DevnetNodeInfo[] {
    const head = this.ctx.chain.headNumber;
    return this.members.map(({ node, mode, head: nodeHead, restarting }) => ({
      index: node.index,
      name: node.name,
      url: node.url,
      wsUrl: node.wsUrl,
      pid: node.pid,
      state: !node.alive
        ? 'killed'
        : restarting || mode.kind === 'lag'
          ? 'lagging'
          : mode.kind === 'stall'
            ? 'stalled'
            : 'running',
      head: nodeHead,
      lag: Math.max(0, head - nodeHead),
    }));
  }

  async mine(count = 1): Promise<number> {
    check(isInt(count, 1, MAX_MINE_COUNT), 'mine count', `an integer from 1 to ${MAX_MINE_COUNT}`, count);
    return this.serial(async () => {
      for (let i = 0; i < count; i++) await this.produce();
      return this.ctx.chain.headNumber;
    });
  }

  async lag(index: number, blocks: number): Promise<void> {
    check(isInt(blocks, 0), 'lag blocks', 'an integer >= 0', blocks);
    return this.setMode(index, blocks === 0 ? FOLLOW : { kind: 'lag', blocks });
  }

  async stall(index: number): Promise<void> {
    return this.setMode(index, { kind: 'stall' });
  }

  async resume(index: number): Promise<void> {
    return this.setMode(index, FOLLOW);
  }

  async kill(index: number): Promise<void> {
    const m = this.member(index);
    return this.serial(() => m.node.kill());
  }

  async restart(index: number): Promise<void> {
    const m = this.member(index);
    if (m.restarting) throw new Error(`${m.node.name} is already restarting`);
    m.restarting = true;
    try {
      await this.serial(() => m.node.kill());
      if (this.stopping) throw new Error('devnet is stopped');
      await m.node.start();
      m.head = 0;
      // The bulk of the replay runs outside the lock so block production goes on meanwhile; the
      // record only grows, and no tick touches a restarting node.
      m.head = await syncNode(this.ctx, m.node, this.ctx.chain.headNumber);
      await this.serial(async () => {
        m.mode = FOLLOW;
        m.head = await syncNode(this.ctx, m.node, this.ctx.chain.headNumber);
      });
    } finally {
      m.restarting = false;
    }
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      if (this.timer) clearTimeout(this.timer);
      this.timer = null;
      await this.control?.close();
      // Killing first makes any in-flight request fail at once instead of running to its timeout.
      await Promise.all(this.members.map((m) => m.node.kill()));
      await this.queue.catch(() => undefined);
      await this.agent.destroy();
    })();
    return this.stopping;
  }

  startTimer(): void {
    if (this.blockTimeMs > 0) this.schedule(Date.now() + this.blockTimeMs);
  }

  /** Keeps the cadence (due times advance by the block time) but never queues a burst after a slow
   * tick, and never overlaps with mine() because the tick goes through the same lock. */
  private schedule(due: number): void {
    if (this.stopping) return;
    this.timer = setTimeout(
      () => {
        this.timer = null;
        this.serial(() => this.produce())
          .catch((err: unknown) => {
            if (!this.stopping) this.log.warn({ err: String(err) }, 'devnet block not produced; retrying next tick');
          })
          .finally(() => this.schedule(Math.max(due + this.blockTimeMs, Date.now())));
      },
      Math.max(0, due - Date.now()),
    );
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(() => {
      if (this.stopping) throw new Error('devnet is stopped');
      return fn();
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  private member(index: number): Member {
    const m = this.members[index];
    if (!Number.isInteger(index) || !m) {
      throw new RangeError(`devnet node index: expected 0..${this.members.length - 1}, got ${JSON.stringify(index)}`);
    }
    return m;
  }

  private async setMode(index: number, mode: Mode): Promise<void> {
    const m = this.member(index);
    return this.serial(async () => {
      if (!m.node.alive || m.restarting) throw new Error(`${m.node.name} is not running; restart it first`);
      m.mode = mode;
      await this.keepUp(m);
    });
  }

  /** Moves a non-leading node to where its mode puts it relative to the recorded head. */
  private async keepUp(m: Member): Promise<void> {
    const head = this.ctx.chain.headNumber;
    if (m.mode.kind === 'stall') return;
    const target = m.mode.kind === 'lag' ? head - m.mode.blocks : head;
    m.head = await syncNode(this.ctx, m.node, target);
  }

  /** One block: the first live following node that is verifiably at the recorded head leads (so
   * killing node 0 only moves the lead), then every other live node is brought along. */
  private async produce(): Promise<number> {
    const { chain } = this.ctx;
    const alive = this.members.filter((m) => m.node.alive && !m.restarting);
    // A node that does not answer (SIGSTOPped, overloaded) sits this block out instead of holding
    // every other node's blocks back; it catches up once it answers again.
    const answers = await Promise.all(alive.map((m) => m.node.responsive()));
    const live = alive.filter((_, i) => answers[i]);
    let leader: Member | undefined;
    for (const m of live) {
      if (m.mode.kind !== 'follow') continue;
      try {
        m.head = await syncNode(this.ctx, m.node, chain.headNumber);
        if (m.head === chain.headNumber) {
          leader = m;
          break;
        }
      } catch (err) {
        this.log.warn({ node: m.node.name, err: String(err) }, 'node cannot lead');
      }
    }
    if (!leader) throw new Error('no live node follows the chain; cannot produce a block');
    const others = live.filter((m) => m !== leader);
    // A following node takes no client request from the moment its pool is collected until it has
    // replayed the new block: a transaction sent to it in between would otherwise sit in its pool,
    // be mined into its copy of the block, and show clients (until rolled back) a block and a
    // receipt the chain never had. It reaches the pool once the node holds the block, and the next
    // block collects it.
    const releases = await Promise.all(others.filter((m) => m.mode.kind === 'follow').map((m) => m.node.hold()));
    try {
      await produceBlock(
        this.ctx,
        leader.node,
        others.map((m) => m.node),
      );
      leader.head = chain.headNumber;
      await Promise.all(
        others.map((m) =>
          this.keepUp(m).catch((err: unknown) => {
            this.log.warn({ node: m.node.name, err: String(err) }, 'node not brought along; retrying next block');
          }),
        ),
      );
    } finally {
      for (const release of releases) release();
    }
    return chain.headNumber;
  }
}

export async function startDevnet(opts: DevnetOptions): Promise<Devnet> {
  const o = { ...opts, nodes: opts.nodes ?? 3 };
  validate(o);
  const host = o.host ?? '127.0.0.1';
  const log = o.logger ?? pino({ level: 'silent' });
  const genesisTimestamp = o.genesisTimestamp ?? 1_700_000_000;
  const agent = new Agent({ keepAliveTimeout: 10_000, connections: 4 });
  const nodes = Array.from(
    { length: o.nodes },
    (_, index) =>
      new DevnetNode({
        index,
        host,
        port: o.basePort ? o.basePort + index : 0,
        chainId: o.chainId,
        genesisTimestamp,
        slotsInAnEpoch: o.slotsInAnEpoch ?? 4,
        dispatcher: agent,
        logger: log,
      }),
  );
  let fleet: DevnetFleet | null = null;
  try {
    const started = await Promise.allSettled(nodes.map((n) => n.start()));
    const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    const geneses = await Promise.all(nodes.map((n) => n.rpc<RpcBlockHeader>('eth_getBlockByNumber', ['0x0', false])));
    const g0 = geneses[0]!;
    for (const [i, g] of geneses.entries()) {
      if (g.hash !== g0.hash) throw new Error(`node-${i} genesis ${g.hash} differs from node-0's ${g0.hash}`);
    }
    const chain = new DevnetChain(recordFromHeader(g0, []), o.blockTimeMs / 1000);
    fleet = new DevnetFleet(o, nodes, chain, agent, log);
    if (o.controlPort !== undefined) await fleet.listen(host, o.controlPort);
  } catch (err) {
    if (fleet) await fleet.stop();
    else {
      await Promise.all(nodes.map((n) => n.kill()));
      await agent.destroy();
    }
    throw err;
  }
  fleet.startTimer();
  log.info({ chainId: o.chainId, nodes: fleet.nodes().map((n) => n.name) }, 'devnet nodes running');
  return fleet;
}
