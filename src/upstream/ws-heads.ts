/**
 * Heads pushed by an upstream's `newHeads` subscription (when it has `ws`). Reconnects with
 * backoff; while it is down the fleet's polling still tracks the node, so this only makes heads
 * arrive sooner, never makes them depend on the socket.
 */
import WebSocket from 'ws';
import { parseHeader, type Header } from './heads.js';

const MAX_BACKOFF_MS = 10_000;

/** The `result` of an upstream's `eth_subscription` notification frame; undefined for anything else. */
export function notificationResult(data: WebSocket.RawData): unknown {
  let msg: { method?: string; params?: { result?: unknown } };
  try {
    msg = JSON.parse(data.toString()) as typeof msg;
  } catch {
    return undefined;
  }
  return msg.method === 'eth_subscription' ? msg.params?.result : undefined;
}

export class WsHeads {
  private socket: WebSocket | null = null;
  private timer: NodeJS.Timeout | null = null;
  private backoff = 500;
  private stopped = false;

  constructor(
    private readonly url: string,
    private readonly onHeader: (h: Header) => void,
  ) {}

  start(): void {
    this.connect();
  }

  private connect(): void {
    if (this.stopped) return;
    const socket = new WebSocket(this.url, { handshakeTimeout: 5_000, maxPayload: 1024 * 1024 });
    this.socket = socket;
    socket.on('open', () => {
      this.backoff = 500;
      socket.send('{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}');
    });
    socket.on('message', (data: WebSocket.RawData) => {
      const header = parseHeader(notificationResult(data));
      if (header) this.onHeader(header);
    });
    // Errors are followed by 'close'; reconnect from there only.
    socket.on('error', () => undefined);
    socket.on('close', () => {
      this.socket = null;
      if (this.stopped) return;
      this.timer = setTimeout(() => this.connect(), this.backoff);
      this.backoff = Math.min(this.backoff * 2, MAX_BACKOFF_MS);
    });
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.socket?.terminate();
    this.socket = null;
  }
}
