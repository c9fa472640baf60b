/**
 * One anvil process of the devnet: how it is started (flags that make every node's genesis equal),
 * when it counts as ready, how it is killed, and a minimal JSON-RPC client to it. Clients reach it
 * through its front (front.ts), which the devnet closes while it replays a block into the node; the
 * devnet's own calls go to anvil directly. It knows nothing about the other nodes or about the
 * chain the devnet is building.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Logger } from 'pino';
import { request, type Dispatcher } from 'undici';
import { DevnetNodeFront } from './front.js';

export interface DevnetNodeOptions {
  index: number;
  host: string;
  /** 0 lets the OS pick; the chosen port is then kept for every restart. */
  port: number;
  chainId: number;
  genesisTimestamp: number;
  slotsInAnEpoch: number;
  dispatcher: Dispatcher;
  logger: Logger;
}

export class DevnetRpcError extends Error {
  constructor(
    readonly method: string,
    readonly code: number,
    message: string,
  ) {
    super(`${method}: ${message} (code ${code})`);
  }
}

const READY_TIMEOUT_MS = 30_000;
const READY_POLL_MS = 50;
// Short: a SIGSTOPped node must not hold block production back for long (it is skipped next block).
const RPC_TIMEOUT_MS = 3_000;

// A crashed test or an uncaught error must not leave anvils behind; 'exit' handlers run synchronously,
// which is enough for a SIGKILL per child.
const liveChildren = new Set<ChildProcess>();
let exitHookInstalled = false;
function track(child: ChildProcess): void {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on('exit', () => {
      for (const c of liveChildren) c.kill('SIGKILL');
    });
  }
  liveChildren.add(child);
  child.once('exit', () => liveChildren.delete(child));
}

/** The platform binary itself, not the npm wrapper script: the wrapper is a second process, and a
 * SIGKILL to its pid would leave the real anvil running. */
export function anvilBinary(): string {
  const arch = process.arch === 'x64' ? 'amd64' : process.arch;
  const pkg = `@foundry-rs/anvil-${process.platform}-${arch}`;
  const exe = process.platform === 'win32' ? 'anvil.exe' : 'anvil';
  try {
    const require = createRequire(import.meta.url);
    return join(dirname(require.resolve(`${pkg}/package.json`)), 'bin', exe);
  } catch {
    return exe;
  }
}

export class DevnetNode {
  readonly index: number;
  readonly name: string;
  /** The port clients use: the node's front (front.ts), kept for every restart. */
  private boundPort: number;
  /** The port anvil itself listens on, a free one picked at each start; only the devnet talks to it. */
  private anvilPort = 0;
  private readonly front: DevnetNodeFront;
  private child: ChildProcess | null = null;
  private id = 0;
  private readonly opts: DevnetNodeOptions;
  private readonly log: Logger;

  constructor(opts: DevnetNodeOptions) {
    this.opts = opts;
    this.index = opts.index;
    this.name = `node-${opts.index}`;
    this.boundPort = opts.port;
    this.log = opts.logger.child({ node: this.name });
    this.front = new DevnetNodeFront(opts.host, () => this.anvilPort);
  }

  get port(): number {
    return this.boundPort;
  }
  get url(): string {
    return `http://${this.opts.host}:${this.boundPort}`;
  }
  get wsUrl(): string {
    return `ws://${this.opts.host}:${this.boundPort}`;
  }
  get pid(): number | null {
    return this.child?.pid ?? null;
  }
  get alive(): boolean {
    return this.child !== null;
  }

  /** Spawns anvil and resolves once it answers eth_chainId with the expected id. */
  async start(): Promise<void> {
    if (this.child) throw new Error(`${this.name} is already running (pid ${this.pid})`);
    const o = this.opts;
    const args = [
      '--host',
      o.host,
      '--port',
      '0',
      '--chain-id',
      String(o.chainId),
      '--timestamp',
      String(o.genesisTimestamp),
      '--no-mining',
      '--order',
      'fifo',
      '--slots-in-an-epoch',
      String(o.slotsInAnEpoch),
    ];
    const child = spawn(anvilBinary(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
    track(child);
    this.child = child;
    child.once('exit', (code, signal) => {
      if (this.child === child) this.child = null;
      this.log.debug({ code, signal }, 'anvil exited');
    });
    try {
      await this.waitListening(child);
      await this.waitAnswering(child);
      this.boundPort = await this.front.open(this.boundPort);
    } catch (err) {
      await this.kill();
      throw err;
    }
    this.log.debug({ anvilPid: child.pid, url: this.url }, 'anvil ready');
  }

  /** The startup banner lists the dev accounts' private keys, so it is dropped, not logged; what
   * follows is one line per RPC method and goes to debug. */
  private waitListening(child: ChildProcess): Promise<void> {
    return new Promise((resolve, reject) => {
      const errTail: string[] = [];
      let listening = false;
      const timer = setTimeout(
        () => fail(new Error(`${this.name}: anvil did not listen within ${READY_TIMEOUT_MS} ms`)),
        READY_TIMEOUT_MS,
      );
      const onExit = (code: number | null, signal: string | null): void =>
        fail(
          new Error(
            `${this.name}: anvil exited before listening (code ${code}, signal ${signal}): ${errTail.join(' | ')}`,
          ),
        );
      const fail = (err: Error): void => {
        clearTimeout(timer);
        child.off('exit', onExit);
        reject(err);
      };
      child.once('exit', onExit);
      createInterface({ input: child.stderr! }).on('line', (line) => {
        if (!listening && errTail.push(line) > 4) errTail.shift();
        this.log.debug({ stream: 'stderr' }, line);
      });
      createInterface({ input: child.stdout! }).on('line', (line) => {
        if (listening) return void this.log.debug({ stream: 'stdout' }, line);
        const m = /^Listening on .*:(\d+)\s*$/.exec(line);
        if (!m) return;
        listening = true;
        this.anvilPort = Number(m[1]);
        clearTimeout(timer);
        child.off('exit', onExit);
        resolve();
      });
    });
  }

  private async waitAnswering(child: ChildProcess): Promise<void> {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      if (this.child !== child) throw new Error(`${this.name}: anvil exited while starting`);
      const answer = await this.rpc<string>('eth_chainId').catch(() => null);
      if (answer !== null) {
        const id = Number(BigInt(answer));
        if (id !== this.opts.chainId)
          throw new Error(`${this.name}: expected chain id ${this.opts.chainId}, got ${id}`);
        return;
      }
      if (Date.now() > deadline)
        throw new Error(`${this.name}: no answer to eth_chainId within ${READY_TIMEOUT_MS} ms`);
      await new Promise((r) => setTimeout(r, READY_POLL_MS));
    }
  }

  /**
   * Runs `fn` (a block replay) while no client request reaches anvil: requests arriving meanwhile
   * wait, so no transaction can slip into the block and no client sees the node mid-replay.
   */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return this.front.exclusive(fn);
  }

  /** Keeps client requests from anvil until the returned function is called (see exclusive). */
  hold(): Promise<() => void> {
    return this.front.hold();
  }

  /** Closes the front and SIGKILLs anvil by pid, resolving when the process is gone. Idempotent. */
  async kill(): Promise<void> {
    await this.front.close();
    const child = this.child;
    if (!child) return;
    return new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) {
        if (this.child === child) this.child = null;
        return resolve();
      }
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  }

  /** Whether the node answers at all within `ms` (a SIGSTOPped node does not). */
  async responsive(ms = 500): Promise<boolean> {
    if (!this.alive) return false;
    return this.rpc('eth_blockNumber', [], ms).then(
      () => true,
      () => false,
    );
  }

  /** One JSON-RPC call to this node's anvil: an error answer throws DevnetRpcError. */
  async rpc<T = unknown>(method: string, params: unknown[] = [], timeoutMs = RPC_TIMEOUT_MS): Promise<T> {
    const body = JSON.stringify({ jsonrpc: '2.0', id: ++this.id, method, params });
    const res = await request(`http://${this.opts.host}:${this.anvilPort}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      dispatcher: this.opts.dispatcher,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    const json = (await res.body.json()) as { result?: T; error?: { code: number; message: string } };
    if (json.error) throw new DevnetRpcError(method, json.error.code, json.error.message);
    if (res.statusCode !== 200) throw new Error(`${method}: HTTP ${res.statusCode}`);
    return json.result as T;
  }
}
