/**
 * One WebSocket connection's subscriptions: eth_subscribe / eth_unsubscribe, Switchyard's own ids,
 * the per-connection cap, and turning feed events into this client's notifications (logs filtered
 * by address/topics as in eth_getLogs). A subscription's notifications wait until the answer that
 * gave its id has been written: calls reach the session through the frame they came in (frame()),
 * and only that frame's answer releases them. Closing the session frees everything it holds.
 */
import { randomBytes } from 'node:crypto';
import type { Call } from '../jsonrpc/parse.js';
import { RpcError, rpcErrors } from '../jsonrpc/errors.js';
import { isAddress, isHash } from '../jsonrpc/hex.js';
import type { Outcome } from '../jsonrpc/response.js';
import type { Metrics } from '../metrics/registry.js';
import type { SubscriptionSession } from '../pipeline/index.js';
import type { ChainFeed, FeedBlock, LogEntry } from './chain.js';
import type { PendingFeed } from './pending.js';

export type Kind = 'newHeads' | 'logs' | 'newPendingTransactions';

interface LogFilter {
  addresses: Set<string> | null;
  topics: (Set<string> | null)[];
}

interface Sub {
  id: string;
  kind: Kind;
  /** Feed sequence when it started: removed logs are only re-sent for blocks it was sent. */
  since: number;
  filter?: LogFilter;
  ready: boolean;
  held: string[];
  stop: () => void;
}

export interface SessionDeps {
  feed: ChainFeed;
  pending: PendingFeed;
  metrics: Metrics;
  maxPerConnection: () => number;
  /** Writes a notification; the server applies the buffer cap. */
  send: (text: string) => void;
}

/** One frame's way into the session (one request or batch). */
export interface FrameSubscriptions extends SubscriptionSession {
  /** The frame's answer has been written (or never will be): its subscriptions may notify now. */
  written(): void;
}

export class Session {
  private readonly subs = new Map<string, Sub>();
  private closed = false;

  constructor(private readonly deps: SessionDeps) {}

  get size(): number {
    return this.subs.size;
  }

  /**
   * A frame's access to eth_subscribe/eth_unsubscribe. Frames are answered in order but worked on
   * concurrently, so the answer written before another frame's says nothing about this one's ids.
   */
  frame(): FrameSubscriptions {
    const made: Sub[] = [];
    return {
      call: (call) => this.call(call, made),
      written: () => {
        for (const sub of made) this.release(sub);
      },
    };
  }

  private call(call: Call, made: Sub[]): Outcome {
    if (call.method === 'eth_unsubscribe') {
      const id = call.params[0];
      if (typeof id !== 'string') return { error: rpcErrors.invalidParams('expected a subscription id') };
      return { result: this.remove(id.toLowerCase()) ? 'true' : 'false' };
    }
    const kind = call.params[0];
    if (kind !== 'newHeads' && kind !== 'logs' && kind !== 'newPendingTransactions') {
      return { error: rpcErrors.invalidParams(`unsupported subscription kind ${JSON.stringify(kind)}; expected newHeads, logs or newPendingTransactions`) };
    }
    let filter: LogFilter | undefined;
    if (kind === 'logs') {
      const f = parseFilter(call.params[1]);
      if (f instanceof RpcError) return { error: f };
      filter = f;
    }
    if (this.subs.size >= this.deps.maxPerConnection()) return { error: new RpcError('TOO_MANY_SUBSCRIPTIONS') };
    const id = `0x${randomBytes(16).toString('hex')}`;
    const sub: Sub = { id, kind, since: this.deps.feed.current, filter, ready: false, held: [], stop: () => undefined };
    this.start(sub);
    this.subs.set(id, sub);
    made.push(sub);
    this.deps.metrics.wsSubscriptions.inc({ kind });
    return { result: `"${id}"` };
  }

  private release(sub: Sub): void {
    // Unsubscribed in the same frame, or the socket closed: what it held is never sent.
    if (sub.ready || this.subs.get(sub.id) !== sub) return;
    sub.ready = true;
    for (const text of sub.held) this.deps.send(text);
    sub.held = [];
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const id of [...this.subs.keys()]) this.remove(id);
  }

  private remove(id: string): boolean {
    const sub = this.subs.get(id);
    if (sub === undefined) return false;
    sub.stop();
    this.subs.delete(id);
    this.deps.metrics.wsSubscriptions.dec({ kind: sub.kind });
    return true;
  }

  private notify(sub: Sub, result: string): void {
    const text = `{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"${sub.id}","result":${result}}}`;
    this.deps.metrics.wsNotifications.inc({ kind: sub.kind });
    if (sub.ready) this.deps.send(text);
    else sub.held.push(text);
  }

  private start(sub: Sub): void {
    const { feed, pending } = this.deps;
    if (sub.kind === 'newHeads') {
      const onHead = (b: FeedBlock): void => this.notify(sub, b.header);
      feed.on('head', onHead);
      sub.stop = () => feed.off('head', onHead);
    } else if (sub.kind === 'logs') {
      const filter = sub.filter!;
      const onLogs = (b: FeedBlock, removed: boolean): void => {
        if (b.seq <= sub.since) return;
        for (const log of b.logs ?? []) if (matches(filter, log)) this.notify(sub, JSON.stringify(removed ? { ...log, removed: true } : log));
      };
      feed.logsWanted++;
      feed.on('logs', onLogs);
      sub.stop = () => {
        feed.logsWanted--;
        feed.off('logs', onLogs);
      };
    } else {
      const onTx = (hash: string): void => this.notify(sub, `"${hash}"`);
      pending.add(onTx);
      sub.stop = () => pending.remove(onTx);
    }
  }
}

/** The logs filter of eth_subscribe: `{ address?, topics? }` as in eth_getLogs (no block range). */
function parseFilter(v: unknown): LogFilter | RpcError {
  if (v === undefined || v === null) return { addresses: null, topics: [] };
  if (typeof v !== 'object' || Array.isArray(v)) return rpcErrors.invalidParams('expected a logs filter object');
  const o = v as { address?: unknown; topics?: unknown };
  let addresses: Set<string> | null = null;
  if (o.address !== undefined && o.address !== null) {
    const list = Array.isArray(o.address) ? o.address : [o.address];
    if (!list.every(isAddress)) return rpcErrors.invalidParams('address: expected an address or a list of addresses');
    if (list.length > 0) addresses = new Set((list as string[]).map((a) => a.toLowerCase()));
  }
  const topics: (Set<string> | null)[] = [];
  if (o.topics !== undefined && o.topics !== null) {
    if (!Array.isArray(o.topics) || o.topics.length > 4) return rpcErrors.invalidParams('topics: expected a list of at most 4 positions');
    for (const t of o.topics as unknown[]) {
      if (t === null) topics.push(null);
      else {
        const list = Array.isArray(t) ? t : [t];
        if (!list.every(isHash)) return rpcErrors.invalidParams('topics: expected 32-byte hex topics, lists of them, or null');
        topics.push(list.length === 0 ? null : new Set((list as string[]).map((x) => x.toLowerCase())));
      }
    }
  }
  return { addresses, topics };
}

function matches(f: LogFilter, log: LogEntry): boolean {
  if (f.addresses !== null && !f.addresses.has(String(log.address).toLowerCase())) return false;
  for (let i = 0; i < f.topics.length; i++) {
    const want = f.topics[i];
    if (want === null || want === undefined) continue;
    const got = log.topics[i];
    if (got === undefined || !want.has(got.toLowerCase())) return false;
  }
  return true;
}
