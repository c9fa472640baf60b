/**
 * One upstream node: its connection pool, its live figures (head, in-flight, latency), its state.
 * Owns: sending one JSON-RPC call and classifying the answer. Refuses: choosing nodes (routing/),
 * tracking heads across the fleet (fleet.ts). The URL stays inside this object: only `name` leaves.
 */
import { readFileSync } from 'node:fs';
import { Pool, type Dispatcher } from 'undici';
import type { UpstreamConfig } from '../config/schema.js';
import { classifyBatch, classifyHttp, classifyTransport, type Verdict } from './classify.js';
import { postJson } from './exchange.js';
import { Breaker } from './health.js';

export type UpstreamState = 'connecting' | 'healthy' | 'down' | 'quarantined';

export interface CallTiming {
  verdict: Verdict;
  ms: number;
}

interface Pending {
  id: number;
  method: string;
  paramsJson: string;
  timeoutMs: number;
  passive: boolean;
  started: number;
  resolve: (t: CallTiming) => void;
}

function requestText(p: Pending): string {
  return `{"jsonrpc":"2.0","id":${p.id},"method":${JSON.stringify(p.method)},"params":${p.paramsJson}}`;
}

/** A batch answer that left a call out. */
const MISSING: Verdict = { kind: 'retry', reason: 'bad_body', health: true };

/** Weight of the newest latency sample in the moving average. */
const EWMA_ALPHA = 0.2;

export class Upstream {
  readonly name: string;
  readonly weight: number;
  readonly tags: ReadonlySet<string>;
  readonly breaker: Breaker;
  state: UpstreamState = 'connecting';
  head = -1;
  headHash = '';
  headAt = 0;
  /** The node's own `finalized` block, where it supports the tag. */
  finalized = -1;
  finalizedSupported = true;
  inFlight = 0;
  /** Moving average of answer latency in ms; starts optimistic so new nodes get tried. */
  latencyMs = 5;
  calls = 0;
  failures = 0;
  /** Its head is implausibly far beyond the rest of the fleet (fleet.ts): not routed. */
  implausible = false;
  /** Set while the config is being reloaded away from this node: no new calls. */
  retiring = false;
  private nextId = 1;
  private queue: Pending[] = [];
  private readonly headers: Record<string, string>;
  private readonly url: URL;
  private readonly target: { origin: string; path: string; headers: Record<string, string> };
  private readonly dispatcher: Dispatcher;
  private readonly ownsDispatcher: boolean;

  constructor(
    readonly config: UpstreamConfig,
    opts: { dispatcher?: Dispatcher; breaker?: Breaker } = {},
  ) {
    this.name = config.name;
    this.weight = config.weight;
    this.tags = new Set(config.tags);
    this.url = new URL(config.url);
    this.breaker = opts.breaker ?? new Breaker();
    // Static headers first: Switchyard's own content-type, and a Basic header from URL credentials, win.
    this.headers = { ...config.headers, 'content-type': 'application/json' };
    // Credentials in the URL (https://user:key@host) become a Basic header, never a log line.
    if (this.url.username !== '') {
      const user = decodeURIComponent(this.url.username);
      const pass = decodeURIComponent(this.url.password);
      this.headers.authorization = `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
    }
    this.target = { origin: this.url.origin, path: this.url.pathname + this.url.search, headers: this.headers };
    this.ownsDispatcher = opts.dispatcher === undefined;
    this.dispatcher =
      opts.dispatcher ??
      new Pool(this.url.origin, {
        connections: config.maxConnections,
        pipelining: 1,
        keepAliveTimeout: 30_000,
        connectTimeout: 5_000,
        // A node (or a hostile one) must not make Switchyard buffer an unbounded answer.
        maxResponseSize: config.maxResponseBytes,
        ...(config.caFile ? { connect: { ca: readFileSync(config.caFile) } } : {}),
      });
  }

  /**
   * Sends one call. `paramsJson` is the JSON text of the params array. Never throws.
   * Calls made to this node in the same turn of the event loop leave together as one JSON-RPC
   * batch (up to `maxBatchSize`): one HTTP exchange instead of many, which is most of the cost of
   * a call for both sides. Each call still gets its own verdict.
   * `probe`: the fleet's own head and chain-id polls. They leave the breaker alone: it is passive
   * health from routed traffic, and a node that answers eth_getBlockByNumber but fails every
   * routed call would otherwise have its open breaker closed by the next poll, long before the
   * cooldown, and keep getting calls.
   */
  call(method: string, paramsJson: string, timeoutMs: number, opts: { probe?: boolean } = {}): Promise<CallTiming> {
    return new Promise((resolve) => {
      const passive = opts.probe !== true;
      const p: Pending = { id: this.nextId++, method, paramsJson, timeoutMs, passive, started: performance.now(), resolve };
      this.inFlight++;
      this.calls++;
      if (passive) this.breaker.begin();
      this.queue.push(p);
      if (this.queue.length === 1) setImmediate(this.flush);
    });
  }

  private readonly flush = (): void => {
    const queue = this.queue;
    this.queue = [];
    const size = this.config.maxBatchSize;
    for (let i = 0; i < queue.length; i += size) void this.send(queue.slice(i, i + size));
  };

  private async send(batch: Pending[]): Promise<void> {
    const single = batch.length === 1;
    const body = single ? requestText(batch[0]!) : `[${batch.map(requestText).join(',')}]`;
    let timeoutMs = 0;
    for (const p of batch) timeoutMs = Math.max(timeoutMs, p.timeoutMs);
    let verdicts: Map<number, Verdict> | Verdict | null;
    try {
      const { status, text } = await postJson(this.dispatcher, this.target, body, timeoutMs);
      verdicts = single ? classifyHttp(status, text) : classifyBatch(status, text);
    } catch (err) {
      verdicts = classifyTransport(err);
    }
    if (verdicts === null) {
      // The node does not take batches (or not this one): the calls go again one by one.
      for (const p of batch) void this.send([p]);
      return;
    }
    for (const p of batch) {
      const v = verdicts instanceof Map ? (verdicts.get(p.id) ?? MISSING) : verdicts;
      this.finish(p, v);
    }
  }

  private finish(p: Pending, verdict: Verdict): void {
    this.inFlight--;
    const ms = performance.now() - p.started;
    if (verdict.kind === 'retry' && verdict.health) {
      this.failures++;
      if (p.passive) this.breaker.failure();
    } else {
      this.latencyMs += EWMA_ALPHA * (ms - this.latencyMs);
      if (p.passive) this.breaker.success();
    }
    p.resolve({ verdict, ms });
  }

  /** Routable at all: reachable, right chain, plausible head, breaker lets calls through, not being removed. */
  get available(): boolean {
    return this.state === 'healthy' && !this.retiring && !this.implausible && this.breaker.allows();
  }

  async close(): Promise<void> {
    if (this.ownsDispatcher) await this.dispatcher.close().catch(() => undefined);
  }
}
