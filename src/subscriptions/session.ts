/**
 * One WebSocket connection's subscriptions: eth_subscribe / eth_unsubscribe, Switchyard's own ids,
 * the per-connection and per-IP caps, and turning feed events into this client's notifications
 * (`logs` subscriptions are registered with the feed's fanout, which matches and serialises once
 * for all clients). A subscription's notifications wait until the answer that gave its id has
 * been written: calls reach the session through the frame they came in (frame()), and only that
 * frame's answer releases them; what is held counts as unsent data against the client's cap.
 * Closing the session frees everything it holds.
 */
import { randomBytes } from 'node:crypto';
import type { Call } from '../jsonrpc/parse.js';
import { RpcError, rpcErrors } from '../jsonrpc/errors.js';
import type { Outcome } from '../jsonrpc/response.js';
import type { SubscriptionKind } from '../metrics/labels.js';
import type { Metrics } from '../metrics/registry.js';
import type { SubscriptionSession } from '../pipeline/index.js';
import type { ChainFeed, FeedBlock } from './chain.js';
import { parseFilter, type LogFilter } from './log-filter.js';
import type { LogsClient, LogsSubscription, Room } from './logs-fanout.js';
import type { PendingFeed } from './pending.js';

export type Kind = SubscriptionKind;

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
  /** The client IP's subscriptions across its sockets (subscriptions.maxPerIp): false when it holds the cap. */
  takeIpSlot: () => boolean;
  giveIpSlot: () => void;
  /** Writes a notification; the server applies the buffer cap (held notifications included). */
  send: (text: string) => void;
  /** Bytes written to the socket and not yet taken; null once the socket takes nothing more. */
  unsent: () => number | null;
  maxBufferBytes: () => number;
  /** Closes the client as a slow reader (1013). */
  overflow: () => void;
}

/** One frame's way into the session (one request or batch). */
export interface FrameSubscriptions extends SubscriptionSession {
  /** The frame's answer has been written (or never will be): its subscriptions may notify now. */
  written(): void;
}

export class Session implements LogsClient {
  private readonly subs = new Map<string, Sub>();
  private closed = false;
  /** Bytes of notifications held for subscriptions whose answer is not written yet. */
  private held = 0;

  constructor(private readonly deps: SessionDeps) {}

  get size(): number {
    return this.subs.size;
  }

  /** Unsent data the session holds (the server adds what the socket holds). */
  get heldBytes(): number {
    return this.held;
  }

  /** For the logs fanout: written to while under half the cap, so answers and heads still fit. */
  room(): Room {
    const unsent = this.closed ? null : this.deps.unsent();
    if (unsent === null) return 'closed';
    return (unsent + this.held) * 2 >= this.deps.maxBufferBytes() ? 'full' : 'ready';
  }

  overflow(): void {
    this.deps.overflow();
  }

  /**
   * A frame's access to eth_subscribe/eth_unsubscribe. Frames are answered in order but worked on
   * concurrently, so the answer written before another frame's says nothing about this one's ids.
   */
  frame(): FrameSubscriptions {
    const made: Sub[] = [];
    return {
      call: (call) => this.answer(call, made),
      written: () => {
        for (const sub of made) this.release(sub);
      },
    };
  }

  /** eth_subscribe or eth_unsubscribe, answered here: subscriptions live with the socket. */
  private answer(call: Call, made: Sub[]): Outcome {
    if (call.method === 'eth_unsubscribe') {
      const id = call.params[0];
      if (typeof id !== 'string') return { error: rpcErrors.invalidParams('expected a subscription id') };
      return { result: this.remove(id.toLowerCase()) ? 'true' : 'false' };
    }
    const kind = call.params[0];
    if (kind !== 'newHeads' && kind !== 'logs' && kind !== 'newPendingTransactions') {
      return {
        error: rpcErrors.invalidParams(
          `unsupported subscription kind ${JSON.stringify(kind)}; expected newHeads, logs or newPendingTransactions`,
        ),
      };
    }
    let filter: LogFilter | undefined;
    if (kind === 'logs') {
      const f = parseFilter(call.params[1]);
      if (f instanceof RpcError) return { error: f };
      filter = f;
    }
    if (this.subs.size >= this.deps.maxPerConnection()) return { error: new RpcError('TOO_MANY_SUBSCRIPTIONS') };
    if (!this.deps.takeIpSlot()) return { error: new RpcError('TOO_MANY_IP_SUBSCRIPTIONS') };
    const id = `0x${randomBytes(16).toString('hex')}`;
    const sub: Sub = { id, kind, since: this.deps.feed.current, filter, ready: false, held: [], stop: () => undefined };
    this.start(sub);
    this.subs.set(id, sub);
    made.push(sub);
    this.deps.metrics.recordSubscribed(kind);
    return { result: `"${id}"` };
  }

  private release(sub: Sub): void {
    // Unsubscribed in the same frame, or the socket closed: what it held is never sent.
    if (sub.ready || this.subs.get(sub.id) !== sub) return;
    sub.ready = true;
    const held = sub.held;
    sub.held = [];
    for (const text of held) {
      this.held -= Buffer.byteLength(text);
      this.deps.send(text);
    }
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
    for (const text of sub.held) this.held -= Buffer.byteLength(text);
    sub.held = [];
    this.deps.giveIpSlot();
    this.deps.metrics.recordUnsubscribed(sub.kind);
    return true;
  }

  private notify(sub: Sub, result: string): void {
    this.deps.metrics.recordNotifications(sub.kind);
    this.write(sub, `${envelope(sub.id)}${result}}}`);
  }

  private write(sub: Sub, text: string): void {
    if (sub.ready) return this.deps.send(text);
    // Held, as written data would be: counted against the cap, which closes a client past it.
    const unsent = this.deps.unsent();
    if (unsent === null) return;
    if (unsent + this.held >= this.deps.maxBufferBytes()) return this.deps.overflow();
    sub.held.push(text);
    this.held += Buffer.byteLength(text);
  }

  private start(sub: Sub): void {
    const { feed, pending } = this.deps;
    if (sub.kind === 'newHeads') {
      const onHead = (b: FeedBlock): void => this.notify(sub, b.header);
      feed.on('head', onHead);
      sub.stop = () => feed.off('head', onHead);
    } else if (sub.kind === 'logs') {
      const logs: LogsSubscription = {
        filter: sub.filter!,
        since: sub.since,
        prefix: envelope(sub.id),
        client: this,
        write: (text) => this.write(sub, text),
      };
      feed.logs.add(logs);
      sub.stop = () => feed.logs.remove(logs);
    } else {
      const onTx = (hash: string): void => this.notify(sub, `"${hash}"`);
      pending.add(onTx);
      sub.stop = () => pending.remove(onTx);
    }
  }
}

/** A notification up to its result: the subscription id is Switchyard's own hex, never escaped. */
function envelope(id: string): string {
  return `{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"${id}","result":`;
}
