/**
 * A raw WebSocket client for tests: every message is kept in arrival order; `ask` sends one frame
 * and returns the next answer that is not a notification, `next` waits for a message matching a test.
 */
import type { Test } from 'tap';
import { connect } from 'node:net';
import WebSocket from 'ws';
import { waitFor } from './wait.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Msg = any;

export interface TestSocket {
  socket: WebSocket;
  messages: Msg[];
  closed: Promise<{ code: number; reason: string }>;
  ask(text: string | Buffer): Promise<Msg>;
  next(match: (m: Msg) => boolean): Promise<Msg>;
}

export async function openSocket(t: Test, url: string, opts: WebSocket.ClientOptions = {}): Promise<TestSocket> {
  const socket = new WebSocket(url, { perMessageDeflate: false, ...opts });
  t.teardown(() => socket.terminate());
  const messages: Msg[] = [];
  socket.on('message', (data) => messages.push(JSON.parse(data.toString()) as Msg));
  socket.on('error', () => undefined);
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
    socket.once('error', reject);
  });
  const next = async (match: (m: Msg) => boolean): Promise<Msg> =>
    waitFor('a websocket message', () => {
      const i = messages.findIndex(match);
      if (i < 0) return undefined;
      const [m] = messages.splice(i, 1);
      return m as Msg;
    });
  return {
    socket,
    messages,
    closed,
    next,
    ask: async (text) => {
      socket.send(text);
      return next((m) => Array.isArray(m) || m.method !== 'eth_subscription');
    },
  };
}

/**
 * Sends a raw WebSocket upgrade request (with the given extra header lines) and returns the status
 * line of the answer ('' if none came); `hangUp` closes the client's side right after sending.
 */
export function rawUpgrade(port: number, headers: string[], opts: { hangUp?: boolean } = {}): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (d: Buffer) => (text += d.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(text.split('\r\n')[0] ?? ''));
    socket.on('connect', () => {
      socket.write(
        ['GET / HTTP/1.1', 'Host: 127.0.0.1', 'Upgrade: websocket', 'Connection: Upgrade', ...headers, '', ''].join(
          '\r\n',
        ),
      );
      if (opts.hangUp) socket.end();
    });
  });
}
