/**
 * One upstream node: its connection pool, its live figures (head, in-flight, latency), its state.
 * Owns: sending one JSON-RPC call and classifying the answer. Refuses: choosing nodes (routing/),
 * tracking heads across the fleet (fleet.ts). The URL stays inside this object: only `name` leaves.
 */
import { Pool, type Dispatcher } from 'undici';
import type { UpstreamConfig } from '../config/schema.js';
import { classifyHttp, classifyTransport, type Verdict } from './classify.js';
import { Breaker } from './health.js';

export type UpstreamState = 'connecting' | 'healthy' | 'down' | 'quarantined';

export interface CallTiming {
  verdict: Verdict;
  ms: number;
}

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
  /** Set while the config is being reloaded away from this node: no new calls. */
  retiring = false;
  private nextId = 1;
  private readonly url: URL;
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
    this.ownsDispatcher = opts.dispatcher === undefined;
    this.dispatcher =
      opts.dispatcher ??
      new Pool(this.url.origin, {
        connections: config.maxConnections,
        pipelining: 1,
        keepAliveTimeout: 30_000,
        connectTimeout: 5_000,
      });
  }

  /**
   * Sends one call. `paramsJson` is the JSON text of the params array. Never throws.
   * `probe`: the fleet's own head and chain-id polls. They leave the breaker alone: it is passive
   * health from routed traffic, and a node that answers eth_getBlockByNumber but fails every
   * routed call would otherwise have its open breaker closed by the next poll, long before the
   * cooldown, and keep getting calls.
   */
  async call(method: string, paramsJson: string, timeoutMs: number, signal?: AbortSignal, opts: { probe?: boolean } = {}): Promise<CallTiming> {
    const passive = opts.probe !== true;
    const id = this.nextId++;
    const body = `{"jsonrpc":"2.0","id":${id},"method":${JSON.stringify(method)},"params":${paramsJson}}`;
    const started = performance.now();
    this.inFlight++;
    this.calls++;
    if (passive) this.breaker.begin();
    let verdict: Verdict;
    try {
      const timeout = AbortSignal.timeout(timeoutMs);
      const res = await this.dispatcher.request({
        origin: this.url.origin,
        path: this.url.pathname + this.url.search,
        method: 'POST',
        headers: this.headers(),
        body,
        signal: signal ? AbortSignal.any([timeout, signal]) : timeout,
      });
      const text = await res.body.text();
      verdict = classifyHttp(res.statusCode, text);
    } catch (err) {
      verdict = classifyTransport(err);
    } finally {
      this.inFlight--;
    }
    const ms = performance.now() - started;
    if (verdict.kind === 'retry' && verdict.health) {
      this.failures++;
      if (passive) this.breaker.failure();
    } else {
      this.latencyMs += EWMA_ALPHA * (ms - this.latencyMs);
      if (passive) this.breaker.success();
    }
    return { verdict, ms };
  }

  private headers(): Record<string, string> {
    const h: Record<string, string> = { 'content-type': 'application/json' };
    // Credentials in the URL (https://user:key@host) become a Basic header, never a log line.
    if (this.url.username !== '') {
      const user = decodeURIComponent(this.url.username);
      const pass = decodeURIComponent(this.url.password);
      h.authorization = `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
    }
    return h;
  }

  /** Routable at all: reachable, right chain, breaker lets calls through, not being removed. */
  get available(): boolean {
    return this.state === 'healthy' && !this.retiring && this.breaker.allows();
  }

  async close(): Promise<void> {
    if (this.ownsDispatcher) await this.dispatcher.close().catch(() => undefined);
  }
}
