// SPEC 3.2: requests rejected before processing get a status and still carry a JSON-RPC error body;
// everything produced by processing is HTTP 200. Also the local answers (eth_chainId, net_version,
// net_listening need no node) and the deny list (dev-node and signing methods never reach a node).

import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import t, { type Test } from 'tap';
import { request } from 'undici';
import { startAnvil } from '../helpers/anvil.js';
import { call, get, post } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

const MAX_BODY = 4096;
const MAX_BATCH = 5;

const anvil = await startAnvil();
t.teardown(() => anvil.stop());
const sy = await startSwitchyard(t, {
  upstreams: [{ name: 'a', url: anvil.url }],
  server: { maxBodyBytes: MAX_BODY, maxBatchSize: MAX_BATCH },
});

const CHAIN_ID = '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}';
const CHAIN_ID_ANSWER = '{"jsonrpc":"2.0","id":1,"result":"0xba"}';

async function raw(method: string, body: string | Buffer | undefined, headers: Record<string, string> = {}) {
  const res = await request(sy.url, { method: method as 'POST', headers, body });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text };
}

/** Still serving: an ordinary call gets its ordinary answer. */
async function stillServing(t: Test): Promise<void> {
  const r = await post(sy.url, CHAIN_ID);
  t.equal(r.status, 200, 'still serving');
  t.equal(r.text, CHAIN_ID_ANSWER, 'still serving');
}

/**
 * POSTs a chunked body (no Content-Length) in chunks until the server answers, the way a client
 * streaming a huge body would; returns the answer. The server must cut it off by counting bytes.
 */
function postChunkedUntilAnswered(
  chunk: Buffer,
  maxChunks: number,
): Promise<{ status: number; text: string; headers: Record<string, unknown>; sent: number }> {
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    const req = httpRequest(sy.url, { method: 'POST', headers: { 'content-type': 'application/json' }, agent: false });
    req.on('response', (res) => {
      answered = true;
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, headers: res.headers, sent }));
      res.on('error', reject);
    });
    // Writing after the server closed its side may fail; only the answer matters.
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    const pump = (): void => {
      while (!answered && sent < maxChunks) {
        sent++;
        if (!req.write(chunk)) {
          req.once('drain', pump);
          return;
        }
      }
      if (!answered && sent >= maxChunks) req.end();
    };
    req.write('[');
    pump();
  });
}

t.test('PUT and DELETE: 405 with Allow and a -32600 body', async (t) => {
  for (const method of ['PUT', 'DELETE', 'PATCH']) {
    const r = await raw(method, method === 'DELETE' ? undefined : CHAIN_ID, { 'content-type': 'application/json' });
    t.equal(r.status, 405, method);
    t.equal(r.headers.allow, 'POST, GET, HEAD, OPTIONS', method);
    const body = JSON.parse(r.text);
    t.equal(body.jsonrpc, '2.0');
    t.equal(body.id, null);
    t.equal(body.error.code, -32600, method);
    t.equal(body.error.data.reason, 'BAD_HTTP_METHOD');
  }
  await stillServing(t);
});

t.test('text/plain: 415 with a -32600 body', async (t) => {
  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/jsonx']) {
    const r = await raw('POST', CHAIN_ID, { 'content-type': type });
    t.equal(r.status, 415, type);
    const body = JSON.parse(r.text);
    t.equal(body.id, null);
    t.equal(body.error.code, -32600);
    t.equal(body.error.data.reason, 'BAD_CONTENT_TYPE');
  }
  const none = await raw('POST', CHAIN_ID, {});
  t.equal(none.status, 415, 'no content type');
});

t.test('JSON content types are accepted', async (t) => {
  for (const type of [
    'application/json',
    'application/json; charset=UTF-8',
    'Application/JSON;charset=utf-8',
    'application/json-rpc',
    'application/jsonrequest',
  ]) {
    const r = await raw('POST', CHAIN_ID, { 'content-type': type });
    t.equal(r.status, 200, type);
    t.equal(r.text, CHAIN_ID_ANSWER, type);
  }
});

t.test('body over maxBodyBytes with an honest Content-Length: 413', async (t) => {
  const params = JSON.stringify(['x'.repeat(MAX_BODY)]);
  const body = `{"jsonrpc":"2.0","id":1,"method":"web3_sha3","params":${params}}`;
  t.ok(Buffer.byteLength(body) > MAX_BODY);
  const r = await raw('POST', body, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(body)),
  });
  t.equal(r.status, 413);
  const e = JSON.parse(r.text);
  t.equal(e.id, null);
  t.equal(e.error.code, -32600);
  t.equal(e.error.message, 'request body too large');
  t.equal(e.error.data.reason, 'BODY_TOO_LARGE');
  // A much larger body: the 413 must still reach the client although the server never reads it.
  const big = Buffer.alloc(1024 * 1024, 0x20);
  const r2 = await raw('POST', big, { 'content-type': 'application/json', 'content-length': String(big.length) });
  t.equal(r2.status, 413);
  t.equal(JSON.parse(r2.text).error.message, 'request body too large');
  await stillServing(t);
});

t.test('body over maxBodyBytes, chunked (no Content-Length): 413 while it streams', async (t) => {
  const chunk = Buffer.from(`${CHAIN_ID},`.repeat(16));
  // 64 x ~1 KiB is 16 times the cap; the server must answer long before the client would stop.
  const r = await postChunkedUntilAnswered(chunk, 64 * 1024);
  t.equal(r.status, 413);
  const e = JSON.parse(r.text);
  t.equal(e.id, null);
  t.equal(e.error.code, -32600);
  t.equal(e.error.message, 'request body too large');
  t.ok(r.sent < 64 * 1024, 'answered before the client finished sending');
  await stillServing(t);
});

t.test('a body exactly at maxBodyBytes is read', async (t) => {
  const head = '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[],"pad":"';
  const body = `${head}${'p'.repeat(MAX_BODY - head.length - 2)}"}`;
  t.equal(Buffer.byteLength(body), MAX_BODY);
  const r = await post(sy.url, body);
  t.equal(r.status, 200);
  t.equal(r.text, CHAIN_ID_ANSWER);
});

t.test('batch of maxBatchSize + 1: 413 with an array of one -32600', async (t) => {
  const batch = Array.from({ length: MAX_BATCH + 1 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'eth_chainId' }));
  const r = await post(sy.url, batch);
  t.equal(r.status, 413);
  const body = JSON.parse(r.text);
  t.ok(Array.isArray(body));
  t.equal(body.length, 1);
  t.equal(body[0].id, null);
  t.equal(body[0].error.code, -32600);
  t.equal(body[0].error.message, `batch too large: ${MAX_BATCH + 1} calls, at most ${MAX_BATCH} allowed`);
  t.equal(body[0].error.data.reason, 'BATCH_TOO_LARGE');
});

t.test('batch of exactly maxBatchSize is answered', async (t) => {
  const batch = Array.from({ length: MAX_BATCH }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'net_version' }));
  const r = await post(sy.url, batch);
  t.equal(r.status, 200);
  t.equal(r.text, `[${batch.map((_, i) => `{"jsonrpc":"2.0","id":${i},"result":"186"}`).join(',')}]`);
});

t.test('GET / describes the service', async (t) => {
  const r = await get(sy.url);
  t.equal(r.status, 200);
  t.match(String(r.headers['content-type']), /^application\/json/);
  const body = r.json();
  t.strictSame(Object.keys(body).sort(), ['chainId', 'name', 'ready', 'version']);
  t.equal(body.name, 'switchyard');
  t.equal(body.chainId, '0xba');
  t.equal(body.ready, true);
  t.match(body.version, /^\d+\.\d+\.\d+/);
});

t.test('OPTIONS: 204 CORS preflight', async (t) => {
  const r = await raw('OPTIONS', undefined, {
    origin: 'https://dapp.example',
    'access-control-request-method': 'POST',
    'access-control-request-headers': 'content-type',
  });
  t.equal(r.status, 204);
  t.equal(r.text, '');
  t.equal(r.headers['access-control-allow-origin'], '*');
  t.equal(r.headers['access-control-allow-methods'], 'POST, GET, HEAD, OPTIONS');
  t.match(String(r.headers['access-control-allow-headers']), /content-type/i);
  const p = await post(sy.url, CHAIN_ID, { origin: 'https://dapp.example' });
  t.equal(p.headers['access-control-allow-origin'], '*', 'the actual POST carries CORS too');
});

t.test('invalid UTF-8 in the body: -32700', async (t) => {
  const body = Buffer.concat([
    Buffer.from('{"jsonrpc":"2.0","id":1,"method":"web3_sha3","params":["'),
    Buffer.from([0xff, 0xfe, 0xc3]),
    Buffer.from('"]}'),
  ]);
  const r = await raw('POST', body, { 'content-type': 'application/json' });
  t.equal(r.status, 200);
  const e = JSON.parse(r.text);
  t.equal(e.id, null);
  t.equal(e.error.code, -32700);
  t.equal(e.error.data.reason, 'PARSE_ERROR');
});

t.test('params that are not an array: -32602', async (t) => {
  for (const params of ['{"a":1}', '"0x1"', '1', 'true', 'null']) {
    const r = await post(sy.url, `{"jsonrpc":"2.0","id":3,"method":"eth_getBalance","params":${params}}`);
    t.equal(r.status, 200);
    const e = JSON.parse(r.text);
    t.equal(e.id, 3, `params ${params}`);
    t.equal(e.error.code, -32602, `params ${params}`);
    t.equal(e.error.data.reason, 'INVALID_PARAMS');
  }
});

t.test('a request without params is treated as params: []', async (t) => {
  const direct = (await call(anvil.url, 'eth_gasPrice')).result as string;
  const r = await post(sy.url, '{"jsonrpc":"2.0","id":4,"method":"eth_gasPrice"}');
  t.equal(r.status, 200);
  t.equal(r.text, `{"jsonrpc":"2.0","id":4,"result":"${direct}"}`);
  const bn = await post(sy.url, '{"jsonrpc":"2.0","id":5,"method":"eth_blockNumber"}');
  t.equal(bn.text, `{"jsonrpc":"2.0","id":5,"result":"${(await call(anvil.url, 'eth_blockNumber')).result}"}`);
});

t.test('deny-listed methods: -32601 and nothing reaches the node', async (t) => {
  const before = (await call(anvil.url, 'eth_blockNumber')).result as string;
  const denied: [string, unknown[]][] = [
    ['anvil_mine', ['0x5']],
    ['evm_mine', []],
    ['hardhat_mine', ['0x5']],
    [
      'eth_sendTransaction',
      [
        {
          from: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
          to: '0x0000000000000000000000000000000000000001',
          value: '0x1',
        },
      ],
    ],
    ['eth_sign', ['0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266', '0xdeadbeef']],
    ['admin_peers', []],
    ['personal_sign', ['0xdeadbeef', '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266']],
    ['debug_setHead', ['0x0']],
    ['miner_start', []],
  ];
  for (const [method, params] of denied) {
    const r = await post(sy.url, { jsonrpc: '2.0', id: 1, method, params });
    t.equal(r.status, 200, method);
    const e = r.json();
    t.equal(e.error?.code, -32601, method);
    t.equal(e.error?.message, `the method ${method} does not exist/is not available`, method);
  }
  t.equal((await call(anvil.url, 'eth_blockNumber')).result, before, 'anvil_mine/evm_mine did not mine');
  const nonce = await call(anvil.url, 'eth_getTransactionCount', [
    '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
    'pending',
  ]);
  t.equal(nonce.result, '0x0', 'eth_sendTransaction sent nothing');
});

t.test('eth_chainId, net_version, net_listening are answered with no node at all', async (t) => {
  const lone = await startAnvil();
  const sy2 = await startSwitchyard(t, { upstreams: [{ name: 'lone', url: lone.url }] });
  await lone.stop();
  // The node is gone: wait until Switchyard has noticed, so the answers below can only be local.
  await waitFor('upstream marked down', async () => (await get(`${sy2.adminUrl}/ready?upstreams=1`)).status === 503);
  const r = await post(
    sy2.url,
    '[{"jsonrpc":"2.0","id":1,"method":"eth_chainId"},{"jsonrpc":"2.0","id":2,"method":"net_version","params":[]},{"jsonrpc":"2.0","id":3,"method":"net_listening","params":[]}]',
  );
  t.equal(r.status, 200);
  t.equal(
    r.text,
    '[{"jsonrpc":"2.0","id":1,"result":"0xba"},{"jsonrpc":"2.0","id":2,"result":"186"},{"jsonrpc":"2.0","id":3,"result":true}]',
  );
  const fwd = await post(sy2.url, '{"jsonrpc":"2.0","id":4,"method":"eth_gasPrice"}');
  t.equal(fwd.json().error?.code, -32002, 'a forwarded call has no upstream (so the above were local)');
});

t.test('bytes that are not HTTP: 400 with a -32600 body, id null', async (t) => {
  const answer = await new Promise<string>((resolve, reject) => {
    const socket = connect(Number(new URL(sy.url).port), '127.0.0.1');
    let data = '';
    socket.on('data', (d: Buffer) => (data += d.toString('latin1')));
    socket.on('close', () => resolve(data));
    socket.on('error', reject);
    socket.write('NOT HTTP AT ALL\r\n\r\n');
  });
  const [head, body] = answer.split('\r\n\r\n', 2) as [string, string];
  t.match(head, /^HTTP\/1\.1 400 /, 'HTTP 400');
  t.match(head, /content-type: application\/json/i);
  const rpc = JSON.parse(body);
  t.equal(rpc.jsonrpc, '2.0');
  t.equal(rpc.id, null);
  t.equal(rpc.error.code, -32600);
  t.equal(rpc.error.data.reason, 'BAD_HTTP_REQUEST');
  await stillServing(t);
});
