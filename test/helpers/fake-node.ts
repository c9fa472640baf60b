/**
 * A scriptable fake node, only for faults a real node can't produce (garbage bodies, hangs, resets,
 * slow answers). It answers eth_chainId and eth_blockNumber like a healthy node unless told otherwise.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Test } from 'tap';

export type FakeAnswer =
  | { result: unknown; delayMs?: number }
  | { error: { code: number; message: string; data?: unknown }; delayMs?: number }
  | { status: number; body: string; delayMs?: number }
  | { hang: true }
  | { reset: true };

export type Script = (method: string, params: unknown[]) => FakeAnswer | undefined;

export interface FakeNode {
  url: string;
  calls: { method: string; params: unknown[] }[];
  head: number;
  chainId: number;
  script: Script;
  close(): Promise<void>;
}

export async function startFakeNode(t: Test, script: Script = () => undefined): Promise<FakeNode> {
  const sockets = new Set<import('node:net').Socket>();
  const node: FakeNode = { url: '', calls: [], head: 1, chainId: 186, script, close: async () => undefined };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let text = '';
    req.on('data', (d: Buffer) => (text += d.toString()));
    req.on('end', () => {
      const body = JSON.parse(text) as { id: unknown; method: string; params: unknown[] };
      node.calls.push({ method: body.method, params: body.params });
      const answer: FakeAnswer = node.script(body.method, body.params) ??
        (body.method === 'eth_chainId'
          ? { result: `0x${node.chainId.toString(16)}` }
          : body.method === 'eth_blockNumber'
            ? { result: `0x${node.head.toString(16)}` }
            : { error: { code: -32601, message: 'Method not found' } });
      if ('hang' in answer) return;
      if ('reset' in answer) {
        req.socket.destroy();
        return;
      }
      const send = (): void => {
        if ('status' in answer) {
          res.writeHead(answer.status, { 'content-type': 'application/json' });
          res.end(answer.body);
          return;
        }
        const payload = 'result' in answer ? { jsonrpc: '2.0', id: body.id, result: answer.result } : { jsonrpc: '2.0', id: body.id, error: answer.error };
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(payload));
      };
      if (answer.delayMs) setTimeout(send, answer.delayMs);
      else send();
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  node.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  node.close = () =>
    new Promise<void>((r) => {
      for (const s of sockets) s.destroy();
      server.close(() => r());
    });
  t.teardown(() => node.close());
  return node;
}
