/**
 * The upstream client: transport to one node, nothing else. Owns the undici Pools, which calls go
 * alone and which through the micro-batcher (micro-batch.ts: calls made in the same event-loop turn
 * leave as one JSON-RPC batch; the fleet's probes and calls with a byte budget always leave alone),
 * exchanges of calls sent together by their caller (callMany: one batch now, one verdict per call),
 * the classification of every answer (classify.ts), and the figures that come from answers alone:
 * in-flight count, calls, failures, latency moving average, the passive-health breaker and the
 * hold-off (holdoff.ts: no failure, the breaker untouched).
 * Refuses: any idea of heads, up/down or retiring; that state is the fleet's (fleet.ts). The queue
 * and the exchanges of queued calls are the micro-batcher's.
 * The URL stays inside this object: only `name` leaves.
 *
 * Deadlines: every call is answered by its own deadline: by its exchange when it leaves alone
 * (exchange.ts), by the micro-batcher's sweep in a batch. Calls sent together (callMany) share one
 * time limit, their caller's.
 *
 * Expensive calls (methods/table.ts `expensive`: eth_call, traces, eth_getLogs...) never join a
 * batch: each leaves in an exchange of its own at once, so a slow one holds only itself, and its
 * timeout is judged by expensiveVerdict (classify.ts): final, and no mark against the node.
 *
 * Held calls (methods/table.ts `held`: eth_sendRawTransactionSync, traces), which a node holds for
 * long by design, leave alone through a pool of their own, the held lane, of
 * upstreams[].heldConnections connections: however many a node holds, the pool every other call
 * (and the fleet's polls) uses keeps its connections. Their timeouts are judged by heldVerdict
 * (classify.ts): no mark against the node, and their wait is no latency sample. Routing sends no
 * more held calls than the lane has connections (heldInFlight: routing/lane.ts), so none queues
 * inside the lane's pool.
 */
import { readFileSync } from 'node:fs';
import { Pool, type Dispatcher } from 'undici';
import type { UpstreamConfig } from '../config/schema.js';
import { largeAnswers, type BytePool } from './answer-bytes.js';
import { classifyBatchInOrder, tooLarge } from './answers.js';
import type { Cancel } from './cancel.js';
import { CANCELLED, classifyTransport, expensiveVerdict, heldVerdict, type Verdict } from './classify.js';
import { postJson, tracedTarget } from './exchange.js';
import { Breaker } from './health.js';
import { HoldOff } from './holdoff.js';
import { MicroBatcher, MISSING, type CallTiming, type Pending } from './micro-batch.js';
import { batchText, type OutgoingCall } from './request-text.js';
import { answerCarries, identityOfText, type Identity } from '../methods/identity.js';

export type { OutgoingCall } from './request-text.js';
export type { CallTiming } from './micro-batch.js';

/** What the rest of Switchyard needs from a transport to one node (fakes implement it in tests). */
export interface UpstreamClient {
  readonly name: string;
  readonly config: UpstreamConfig;
  readonly breaker: Breaker;
  /** Held off after a "too many requests" answer (holdoff.ts); fakes in tests may have none. */
  readonly holdOff?: HoldOff;
  readonly inFlight: number;
  /** Resolves once no call is in flight (a removed node is closed then). */
  idle(): Promise<void>;
  /** Moving average of answer latency in ms. */
  readonly latencyMs: number;
  readonly calls: number;
  readonly failures: number;
  /** Expensive calls sent and not yet answered (a node running one may answer its polls late). */
  readonly expensiveInFlight?: number;
  /** Held calls (CallOptions.held) sent and not yet answered: what the held lane carries now. */
  readonly heldInFlight?: number;
  /**
   * Sends one call; `paramsJson` is the JSON text of the params array. Never throws.
   * `probe`: the fleet's own polls; they leave the breaker alone (it is passive health from routed
   * traffic: a node that answers polls but fails every routed call must stay open until cooldown).
   * `expensive`: sent alone at once, and a timeout or a connection lost after sending is a final
   * verdict that leaves the node's health alone (classify.ts expensiveVerdict).
   * `budget`: the bytes the call's request may still hold; the call goes in an exchange of its own
   * and is answered `response_too_large` the moment its answer passes what is left.
   * `held`: sent alone on the held lane, and a timeout or a connection lost after sending leaves
   * the node's health alone (classify.ts heldVerdict).
   */
  call(method: string, paramsJson: string, timeoutMs: number, opts?: CallOptions): Promise<CallTiming>;
  /**
   * Sends these calls in one exchange now (a batch, up to maxBatchSize calls), bypassing the
   * micro-batcher: a verdict per call, in order, and the exchange's time. Never throws.
   */
  callMany(calls: readonly OutgoingCall[], timeoutMs: number, traceparent?: string): Promise<ManyTiming>;
  close(): Promise<void>;
}

export interface CallOptions {
  probe?: boolean;
  expensive?: boolean;
  held?: boolean;
  budget?: BytePool;
  /** W3C traceparent for the exchange (tracing/): the attempt's CLIENT span, so the node's trace joins. */
  traceparent?: string;
  /**
   * The caller may cancel the call (a hedged read: routing/hedge.ts). Cancelled, it is answered at
   * once with the CANCELLED verdict: dropped when still queued, its exchange cut off when it left
   * alone (the connection is not left busy), left to finish for the others when it left in a batch.
   */
  cancel?: Cancel;
}

export interface ManyTiming {
  verdicts: Verdict[];
  ms: number;
}

export interface ClientOptions {
  dispatcher?: Dispatcher;
  /** The held lane's; a test that hands in `dispatcher` alone gets it for both. */
  heldDispatcher?: Dispatcher;
  breaker?: Breaker;
  holdOff?: HoldOff;
  /** Starting latency average (a node replaced on reload keeps its figure). */
  latencyMs?: number;
  /** The pool of large answers being received; the process's own unless a test hands in one. */
  pool?: BytePool;
}

/** An answer that is not about what was asked (another block, another hash): the node's bad answer. */
const WRONG_ANSWER: Verdict = { kind: 'retry', reason: 'wrong_answer', health: false, why: 'not what was asked' };

/** A result that does not carry what was asked is a bad answer from that node, tried elsewhere. */
function checked(identity: Identity | null, verdict: Verdict): Verdict {
  return identity !== null && verdict.kind === 'result' && !answerCarries(identity, verdict.result)
    ? WRONG_ANSWER
    : verdict;
}

/** Weight of the newest latency sample in the moving average. */
const EWMA_ALPHA = 0.2;

export class HttpUpstreamClient implements UpstreamClient {
  readonly name: string;
  readonly breaker: Breaker;
  readonly holdOff: HoldOff;
  inFlight = 0;
  /** Starts optimistic so new nodes get tried. */
  latencyMs = 5;
  calls = 0;
  failures = 0;
  expensiveInFlight = 0;
  heldInFlight = 0;
  private nextId = 1;
  private readonly batcher: MicroBatcher;
  private readonly headers: Record<string, string>;
  private readonly url: URL;
  private readonly target: { origin: string; path: string; headers: Record<string, string> };
  private readonly dispatcher: Dispatcher;
  /** The pools made here (not handed in): closed with the client. */
  private readonly owned: Pool[] = [];
  private readonly pool: BytePool;
  /** Waiting for inFlight to reach 0 (idle()). */
  private idleWaiters: (() => void)[] = [];

  constructor(
    readonly config: UpstreamConfig,
    opts: ClientOptions = {},
  ) {
    this.name = config.name;
    this.url = new URL(config.url);
    this.breaker = opts.breaker ?? new Breaker();
    this.holdOff = opts.holdOff ?? new HoldOff();
    if (opts.latencyMs !== undefined) this.latencyMs = opts.latencyMs;
    this.pool = opts.pool ?? largeAnswers;
    // Static headers first: Switchyard's own content-type, and a Basic header from URL credentials, win.
    this.headers = { ...config.headers, 'content-type': 'application/json' };
    // Credentials in the URL (https://user:key@host) become a Basic header, never a log line.
    if (this.url.username !== '') {
      const user = decodeURIComponent(this.url.username);
      const pass = decodeURIComponent(this.url.password);
      this.headers.authorization = `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
    }
    this.target = { origin: this.url.origin, path: this.url.pathname + this.url.search, headers: this.headers };
    const ca = config.caFile ? readFileSync(config.caFile) : undefined;
    const pool = (connections: number): Pool => {
      const made = nodePool(this.url, config, connections, ca);
      this.owned.push(made);
      return made;
    };
    this.dispatcher = opts.dispatcher ?? pool(config.maxConnections);
    this.batcher = new MicroBatcher({
      dispatcher: this.dispatcher,
      // The held lane (heldConnections connections): held calls only.
      heldDispatcher: opts.heldDispatcher ?? opts.dispatcher ?? pool(config.heldConnections),
      target: this.target,
      pool: this.pool,
      holdOff: this.holdOff,
      maxBatchSize: config.maxBatchSize,
      finish: (p, answer) => this.finish(p, answer),
    });
  }

  call(method: string, paramsJson: string, timeoutMs: number, opts: CallOptions = {}): Promise<CallTiming> {
    return new Promise((resolve) => {
      const p = this.pending(method, paramsJson, timeoutMs, opts.probe !== true, resolve, opts.expensive === true);
      if (opts.traceparent !== undefined) p.traceparent = opts.traceparent;
      if (opts.cancel !== undefined) {
        p.cancel = opts.cancel;
        // Queued, or in a batch exchange with other calls: answered now, the exchange left to the others.
        opts.cancel.hold(() => this.finish(p, CANCELLED));
      }
      if (opts.held === true) {
        p.held = true;
        this.heldInFlight++;
      }
      // Alone: an expensive or held call, so that a slow one holds no other call; a probe, so that
      // no routed call's large or slow answer holds it past its deadline (a node answering polls in
      // time must not be marked down for another call's answer); a call with a budget, so that
      // cutting its answer off cuts off no other call.
      if (p.expensive || p.held || opts.probe === true || opts.budget !== undefined) {
        p.budget = opts.budget;
        void this.batcher.send([p]);
        return;
      }
      this.batcher.add(p);
    });
  }

  /** A call made and counted, not yet sent. */
  private pending(
    method: string,
    paramsJson: string,
    timeoutMs: number,
    passive: boolean,
    resolve: (t: CallTiming) => void,
    expensive = false,
  ): Pending {
    const started = performance.now();
    this.inFlight++;
    if (expensive) this.expensiveInFlight++;
    this.calls++;
    if (passive) this.breaker.begin();
    return {
      id: this.nextId++,
      method,
      paramsJson,
      passive,
      expensive,
      held: false, // set by call() for a held call, here so every Pending has one shape
      started,
      deadline: started + timeoutMs,
      identity: identityOfText(method, paramsJson),
      done: false,
      resolve,
      budget: undefined, // set later for some calls, here so every Pending has one shape
      traceparent: undefined,
      cancel: undefined,
    };
  }

  /**
   * One call in an exchange of its own, now (not through the micro-batcher); `traceparent`: the
   * exchange's it stands in for (its CLIENT span), so the node's trace still joins.
   */
  private alone(c: OutgoingCall, timeoutMs: number, traceparent: string | undefined): Promise<CallTiming> {
    return new Promise((resolve) => {
      const p = this.pending(c.method, c.paramsJson, timeoutMs, true, resolve);
      if (traceparent !== undefined) p.traceparent = traceparent;
      void this.batcher.send([p]);
    });
  }

  callMany(calls: readonly OutgoingCall[], timeoutMs: number, traceparent?: string): Promise<ManyTiming> {
    const n = calls.length;
    const started = performance.now();
    const first = this.nextId;
    this.nextId += n;
    this.inFlight += n;
    this.calls += n;
    for (let k = 0; k < n; k++) this.breaker.begin();
    return postJson(
      this.dispatcher,
      tracedTarget(this.target, traceparent),
      batchText(calls, (k) => first + k),
      Math.max(1, timeoutMs),
      { pool: this.pool },
    )
      .then(
        ({ status, text, large, retryAfter }) =>
          this.holdOff.read(classifyBatchInOrder(status, text, first, n, MISSING, large), retryAfter),
        (err: unknown) => classifyTransport(err),
      )
      .then((read) => {
        const ms = performance.now() - started;
        this.ended(n);
        // The node does not take batches, or their answer together is over maxResponseBytes: the
        // calls go one by one, each in an exchange of its own (judged by its own answer), counted there.
        if (read === null || (n > 1 && tooLarge(read))) {
          this.calls -= n;
          return Promise.all(
            calls.map((c) => this.alone(c, Math.max(1, started + timeoutMs - performance.now()), traceparent)),
          ).then((each) => ({
            verdicts: each.map((t) => t.verdict),
            ms: performance.now() - started,
          }));
        }
        let verdicts: Verdict[];
        if (Array.isArray(read)) {
          verdicts = read;
          for (let k = 0; k < n; k++)
            verdicts[k] = checked(identityOfText(calls[k]!.method, calls[k]!.paramsJson), verdicts[k]!);
        } else verdicts = new Array<Verdict>(n).fill(read);
        for (const v of verdicts) this.recordVerdict(v, ms, true);
        return { verdicts, ms };
      });
  }

  private finish(p: Pending, answer: Verdict): void {
    if (p.done) return;
    p.done = true;
    const read = checked(p.identity, answer);
    const judged = p.expensive ? expensiveVerdict(read) : read;
    const verdict = p.held ? heldVerdict(judged) : judged;
    this.ended(1);
    if (p.expensive) this.expensiveInFlight--;
    if (p.held) this.heldInFlight--;
    const ms = performance.now() - p.started;
    this.recordVerdict(verdict, ms, p.passive, p.held);
    p.resolve({ verdict, ms });
  }

  /**
   * What one answered call teaches: failures, the latency average, the breaker (routed calls only).
   * A held call's answer teaches no latency: its wait is the call's (a block to be mined), not the node's speed.
   */
  private recordVerdict(verdict: Verdict, ms: number, passive: boolean, held = false): void {
    // The call's own cost, a held call's wait, or a hold-off (holdoff.ts): not the node failing.
    // No failure, no latency, the slot back.
    // A call cancelled by its caller (a hedged read another node answered first) took at least this
    // long: the time is a sample, so a node whose calls are cut off for lateness does not go on
    // looking quick to the selection; no failure, the slot back.
    if (verdict.kind === 'retry' && verdict.reason === 'cancelled') {
      if (!held) this.latencyMs += EWMA_ALPHA * (ms - this.latencyMs);
      if (passive) this.breaker.release();
      return;
    }
    if (verdict.kind === 'retry' && (verdict.final === true || verdict.holdOff === true || (held && !verdict.health))) {
      if (passive) this.breaker.release();
      return;
    }
    if (verdict.kind === 'retry' && verdict.health) {
      this.failures++;
      if (passive) this.breaker.failure();
    } else {
      if (!held) this.latencyMs += EWMA_ALPHA * (ms - this.latencyMs);
      if (passive) this.breaker.success();
    }
  }

  /** Calls given an answer: idle() waiters wake when none is left. */
  private ended(n: number): void {
    this.inFlight -= n;
    if (this.inFlight === 0 && this.idleWaiters.length > 0) for (const wake of this.idleWaiters.splice(0)) wake();
  }

  async idle(): Promise<void> {
    // Checked again on waking: calls sent one by one after a refused batch start in the same turn the batch ended.
    while (this.inFlight > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  async close(): Promise<void> {
    await Promise.all(this.owned.map((p) => p.close().catch(() => undefined)));
  }
}

/** A pool of `connections` to the node; the main pool and the held lane differ only in size. */
function nodePool(url: URL, config: UpstreamConfig, connections: number, ca: Buffer | undefined): Pool {
  return new Pool(url.origin, {
    connections,
    pipelining: 1,
    keepAliveTimeout: 30_000,
    connectTimeout: 5_000,
    // A node (or a hostile one) must not make Switchyard buffer an unbounded answer.
    maxResponseSize: config.maxResponseBytes,
    ...(ca !== undefined ? { connect: { ca } } : {}),
  });
}
