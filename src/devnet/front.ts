/**
 * The address a devnet node is reached at: a small HTTP front that forwards every request to its
 * anvil process, and that the devnet can close for the few milliseconds it replays a block into the
 * node. anvil mines whatever sits in its pool, so a transaction arriving while a block is being
 * replayed would be mined into it, and the node would show, until the devnet rolls it back, a block
 * the chain never had (with receipts for it). Closed, the front holds new requests and waits for
 * transactions already on their way to anvil; replays then only ever mine the recorded block, and
 * clients never see a node between the blocks of the chain. WebSocket connections are passed through
 * as they are, without a hold.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { Agent, type Dispatcher, request } from 'undici';

/** Methods that put a transaction in the node's pool and answer at once. */
const SUBMITS = /"method"\s*:\s*"eth_send(Raw)?Transaction"/;
/** How long a hold waits for submissions already forwarded; a node that does not answer fails the replay anyway. */
const DRAIN_TIMEOUT_MS = 3_000;

export class DevnetNodeFront {
  private server: Server | null = null;
  private agent: Agent | null = null;
  private readonly sockets = new Set<Socket>();
  private holds = 0;
  /** Settles when the front opens again; null while it is open. */
  private resumed: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private submitting = 0;
  /** Holds waiting for `submitting` to reach 0 (several may wait: holds nest). */
  private drainWaiters: (() => void)[] = [];

  constructor(
    private readonly host: string,
    /** Where anvil listens now (it gets a new port when restarted). */
    private readonly target: () => number,
  ) {}

  /** Listens on `port` (0 = a free one); resolves with the port. */
  async open(port: number): Promise<number> {
    const server = createServer((req, res) => void this.forward(req, res));
    server.on('connection', (s) => {
      this.sockets.add(s);
      s.once('close', () => this.sockets.delete(s));
    });
    server.on('upgrade', (req, socket, head) => this.tunnel(req, socket as Socket, head));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, this.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
    this.agent = new Agent({ keepAliveTimeout: 10_000 });
    return (server.address() as AddressInfo).port;
  }

  /** Stops listening and drops every connection, so in-flight requests fail at once. */
  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = null;
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await this.agent?.destroy();
    this.agent = null;
  }

  /**
   * Closes the front until the returned function is called: requests arriving meanwhile wait, and it
   * resolves once the transactions already forwarded have reached anvil. Holds nest.
   */
  async hold(): Promise<() => void> {
    if (this.holds++ === 0) {
      this.resumed = new Promise<void>((r) => {
        this.wake = r;
      });
    }
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      if (--this.holds > 0) return;
      const wake = this.wake;
      this.resumed = null;
      this.wake = null;
      wake?.();
    };
    await this.drain();
    return release;
  }

  /** Runs `fn` with the front closed (see hold). */
  async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const release = await this.hold();
    try {
      return await fn();
    } finally {
      release();
    }
  }

  private drain(): Promise<void> {
    if (this.submitting === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, DRAIN_TIMEOUT_MS);
      this.drainWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  private async forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let submits = false;
    try {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const body = Buffer.concat(chunks);
      while (this.resumed) await this.resumed;
      const agent = this.agent;
      if (!agent) throw new Error('front closed');
      submits = SUBMITS.test(body.toString('latin1'));
      if (submits) this.submitting++;
      const headers: Record<string, string> = {};
      if (req.headers['content-type']) headers['content-type'] = req.headers['content-type'];
      const answer = await request(`http://${this.host}:${this.target()}${req.url ?? '/'}`, {
        method: (req.method ?? 'POST') as Dispatcher.HttpMethod,
        headers,
        body: req.method === 'GET' || req.method === 'HEAD' ? undefined : body,
        dispatcher: agent,
        headersTimeout: 0,
        bodyTimeout: 0,
      });
      const text = Buffer.from(await answer.body.arrayBuffer());
      const type = answer.headers['content-type'];
      res.writeHead(answer.statusCode, typeof type === 'string' ? { 'content-type': type } : {});
      res.end(text);
    } catch {
      res.destroy();
    } finally {
      if (submits && --this.submitting === 0) {
        const waiters = this.drainWaiters;
        this.drainWaiters = [];
        for (const w of waiters) w();
      }
    }
  }

  private tunnel(req: IncomingMessage, socket: Socket, head: Buffer): void {
    const upstream = connect(this.target(), this.host, () => {
      const lines = [`${req.method} ${req.url} HTTP/${req.httpVersion}`];
      for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
      upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (head.length > 0) upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    const end = (): void => {
      upstream.destroy();
      socket.destroy();
    };
    upstream.on('error', end);
    upstream.on('close', end);
    socket.on('error', end);
    socket.on('close', end);
  }
}
