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
  /** `headers`: sent beside the content type (a 429's Retry-After). */
  | { status: number; body: string; headers?: Record<string, string>; delayMs?: number }
  | { hang: true }
  | { reset: true }
  /** Sends 200 and its headers (and the first bytes of a body), then never finishes the body. */
  | { hangAfterHeaders: true }
  /** Decides asynchronously (e.g. after forwarding the call to a real node), then answers as told. */
  | { defer: () => Promise<FakeAnswer> };

export type Script = (method: string, params: unknown[]) => FakeAnswer | undefined;

export interface FakeNode {
  url: string;
  /** Every call received; `batch`: the size of the batch it came in (fake nodes taking batches). */
  calls: { method: string; params: unknown[]; batch?: number }[];
  head: number;
  chainId: number;
  script: Script;
  close(): Promise<void>;
}

/** A plausible block header at height n (the fleet polls `latest` headers for heads). */
export function fakeHeader(n: number): { number: string; hash: string; parentHash: string } {
  const h = (x: number): string => `0x${x.toString(16).padStart(64, '0')}`;
  return { number: `0x${n.toString(16)}`, hash: h(n + 1), parentHash: h(n) };
}

/** Follows `defer` answers until a final one. */
async function settle(a: FakeAnswer): Promise<FakeAnswer> {
  while ('defer' in a) a = await a.defer();
  return a;
}

/**
 * `batches`: answer a JSON-RPC batch element by element (results and errors only), recording each
 * call with the size of its batch; without it a batch gets one error object, as a node that does
 * not take batches answers.
 */
export async function startFakeNode(
  t: Test,
  script: Script = () => undefined,
  opts: { batches?: boolean } = {},
): Promise<FakeNode> {
  const sockets = new Set<import('node:net').Socket>();
  const node: FakeNode = { url: '', calls: [], head: 1, chainId: 186, script, close: async () => undefined };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let text = '';
    req.on('data', (d: Buffer) => (text += d.toString()));
    req.on('end', () => {
      const parsed = JSON.parse(text) as unknown;
      if (opts.batches && Array.isArray(parsed)) {
        const answers = (parsed as { id: unknown; method: string; params: unknown[] }[]).map((call) => {
          node.calls.push({ method: call.method, params: call.params, batch: parsed.length });
          const a = node.script(call.method, call.params) ?? { error: { code: -32601, message: 'Method not found' } };
          return 'result' in a
            ? { jsonrpc: '2.0', id: call.id, result: a.result }
            : {
                jsonrpc: '2.0',
                id: call.id,
                error: 'error' in a ? a.error : { code: -32603, message: 'not scriptable in a batch' },
              };
        });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(answers));
        return;
      }
      const body = parsed as { id: unknown; method: string; params: unknown[] };
      node.calls.push({ method: body.method, params: body.params });
      const first: FakeAnswer =
        node.script(body.method, body.params) ??
        (body.method === 'eth_chainId'
          ? { result: `0x${node.chainId.toString(16)}` }
          : body.method === 'eth_blockNumber'
            ? { result: `0x${node.head.toString(16)}` }
            : body.method === 'eth_getBlockByNumber' && (body.params[0] === 'latest' || body.params[0] === 'finalized')
              ? { result: fakeHeader(body.params[0] === 'latest' ? node.head : Math.max(0, node.head - 8)) }
              : { error: { code: -32601, message: 'Method not found' } });
      if ('defer' in first) void settle(first).then(respond, () => req.socket.destroy());
      else respond(first);

      function respond(answer: FakeAnswer): void {
        if ('hang' in answer || 'defer' in answer) return;
        if ('hangAfterHeaders' in answer) {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.flushHeaders();
          res.write('{"jsonrpc":"2.0",');
          return;
        }
        if ('reset' in answer) {
          req.socket.destroy();
          return;
        }
        const send = (): void => {
          if ('status' in answer) {
            res.writeHead(answer.status, { ...answer.headers, 'content-type': 'application/json' });
            res.end(answer.body);
            return;
          }
          const payload =
            'result' in answer
              ? { jsonrpc: '2.0', id: body.id, result: answer.result }
              : { jsonrpc: '2.0', id: body.id, error: answer.error };
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify(payload));
        };
        if (answer.delayMs) setTimeout(send, answer.delayMs);
        else send();
      }
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

/**
 * A fake node that holds every `eth_getBalance` (answering 0x2a) until `release()`: a call kept in
 * flight for as long as a test needs (a drain, a shutdown). `held()`: how many arrived.
 */
export async function startHoldingNode(t: Test): Promise<{ node: FakeNode; held: () => number; release: () => void }> {
  let held = 0;
  let release: () => void = () => undefined;
  const released = new Promise<void>((r) => (release = r));
  const node = await startFakeNode(t, (method) => {
    if (method !== 'eth_getBalance') return undefined;
    held++;
    return { defer: async () => (await released, { result: '0x2a' }) };
  });
  return { node, held: () => held, release: () => release() };
}
