// The examples of the JSON-RPC 2.0 specification (jsonrpc.org/specification, section 7), adapted to
// Ethereum methods and sent through Switchyard over HTTP to one real anvil. Each answer is compared
// as exact text or exact values: the wire format is the contract.

import t from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { call, post } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';

const anvil = await startAnvil();
t.teardown(() => anvil.stop());
const sy = await startSwitchyard(t, { upstreams: [{ name: 'a', url: anvil.url }] });

/** The same call sent to the node itself: the answer Switchyard must agree with. */
const direct = (method: string, params: unknown[]) => call(anvil.url, method, params);

t.test('rpc call with positional parameters', async (t) => {
  const want = await direct('eth_getBalance', ['0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266', 'latest']);
  const r = await post(
    sy.url,
    '{"jsonrpc":"2.0","method":"eth_getBalance","params":["0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266","latest"],"id":1}',
  );
  t.equal(r.status, 200);
  t.equal(r.text, `{"jsonrpc":"2.0","id":1,"result":${JSON.stringify(want.result)}}`);
  t.equal(want.result, '0x21e19e0c9bab2400000', 'anvil dev account holds 10000 ETH');
});

t.test('a notification gets no response: HTTP 200, empty body', async (t) => {
  const r = await post(sy.url, '{"jsonrpc":"2.0","method":"eth_blockNumber","params":[]}');
  t.equal(r.status, 200);
  t.equal(r.text, '');
  const r2 = await post(sy.url, '{"jsonrpc":"2.0","method":"eth_chainId"}');
  t.equal(r2.status, 200);
  t.equal(r2.text, '');
});

t.test('rpc call of a non-existent method', async (t) => {
  const r = await post(sy.url, '{"jsonrpc":"2.0","method":"foobar","id":"1"}');
  t.equal(r.status, 200);
  const body = r.json();
  t.equal(body.jsonrpc, '2.0');
  t.equal(body.id, '1');
  t.equal(body.error.code, -32601);
  t.equal(body.error.message, 'the method foobar does not exist/is not available');
  t.equal(body.error.data.reason, 'METHOD_NOT_FOUND');
  t.notOk('result' in body);
});

t.test('rpc call with invalid JSON', async (t) => {
  const r = await post(sy.url, '{"jsonrpc":"2.0","method":"eth_blockNumber","params":"bar","baz]');
  t.equal(r.status, 200);
  const body = r.json();
  t.equal(body.id, null);
  t.equal(body.error.code, -32700);
  t.equal(body.error.data.reason, 'PARSE_ERROR');
  t.match(r.text, /^\{"jsonrpc":"2\.0","id":null,"error":/);
});

t.test('rpc call with invalid request object', async (t) => {
  const r = await post(sy.url, '{"jsonrpc":"2.0","method":1,"params":"bar"}');
  t.equal(r.status, 200);
  const body = r.json();
  t.equal(body.id, null);
  t.equal(body.error.code, -32600);
  t.equal(body.error.data.reason, 'INVALID_REQUEST');
});

t.test('rpc call batch with invalid JSON: one error object, not an array', async (t) => {
  const r = await post(
    sy.url,
    '[{"jsonrpc":"2.0","method":"eth_chainId","params":[],"id":"1"},{"jsonrpc":"2.0","method"]',
  );
  t.equal(r.status, 200);
  const body = r.json();
  t.notOk(Array.isArray(body));
  t.equal(body.id, null);
  t.equal(body.error.code, -32700);
});

t.test('rpc call with an empty array: one error object "empty batch"', async (t) => {
  const r = await post(sy.url, '[]');
  t.equal(r.status, 200);
  const body = r.json();
  t.notOk(Array.isArray(body));
  t.equal(body.id, null);
  t.equal(body.error.code, -32600);
  t.equal(body.error.message, 'empty batch');
  t.equal(body.error.data.reason, 'EMPTY_BATCH');
});

t.test('rpc call with an invalid batch of one: an array of one error', async (t) => {
  const r = await post(sy.url, '[1]');
  t.equal(r.status, 200);
  const body = r.json();
  t.ok(Array.isArray(body));
  t.equal(body.length, 1);
  t.equal(body[0].id, null);
  t.equal(body[0].error.code, -32600);
});

t.test('rpc call with an invalid batch: one error per element', async (t) => {
  const r = await post(sy.url, '[1,2,3]');
  t.equal(r.status, 200);
  const body = r.json();
  t.equal(body.length, 3);
  for (const e of body) {
    t.equal(e.jsonrpc, '2.0');
    t.equal(e.id, null);
    t.equal(e.error.code, -32600);
  }
});

t.test('mixed batch: one answer per non-notification, in request order', async (t) => {
  const balance = await direct('eth_getBalance', ['0x0000000000000000000000000000000000000001', 'latest']);
  const r = await post(
    sy.url,
    `[
      {"jsonrpc":"2.0","method":"eth_chainId","params":[],"id":"1"},
      {"jsonrpc":"2.0","method":"eth_blockNumber","params":[]},
      {"jsonrpc":"2.0","method":"net_version","params":[],"id":"2"},
      {"foo":"boo"},
      {"jsonrpc":"2.0","method":"foo.get","params":{"name":"myself"},"id":"5"},
      {"jsonrpc":"2.0","method":"eth_getBalance","params":["0x0000000000000000000000000000000000000001","latest"],"id":"9"},
      {"jsonrpc":"2.0","method":"get_data","params":[]}
    ]`,
  );
  t.equal(r.status, 200);
  const body = r.json();
  t.equal(body.length, 5);
  t.strictSame(body[0], { jsonrpc: '2.0', id: '1', result: '0xba' });
  t.strictSame(body[1], { jsonrpc: '2.0', id: '2', result: '186' });
  t.equal(body[2].id, null);
  t.equal(body[2].error.code, -32600);
  t.equal(body[3].id, '5');
  t.equal(body[3].error.code, -32601);
  t.equal(
    body[3].error.message,
    'the method foo.get does not exist/is not available',
    'unknown method reported before its (object) params are judged',
  );
  t.strictSame(body[4], { jsonrpc: '2.0', id: '9', result: balance.result });
});

t.test('batch of notifications only: HTTP 200, empty body', async (t) => {
  const r = await post(
    sy.url,
    '[{"jsonrpc":"2.0","method":"eth_chainId","params":[]},{"jsonrpc":"2.0","method":"net_version"},{"jsonrpc":"2.0","method":"no_such_method"}]',
  );
  t.equal(r.status, 200);
  t.equal(r.text, '');
});

t.test('a batch of one valid call is answered with an array of one', async (t) => {
  const r = await post(sy.url, '[{"jsonrpc":"2.0","method":"net_version","params":[],"id":1}]');
  t.equal(r.status, 200);
  t.equal(r.text, '[{"jsonrpc":"2.0","id":1,"result":"186"}]');
});

t.test('params that are not an array: -32602 for a known method, -32601 for an unknown one', async (t) => {
  const known = (await post(sy.url, '{"jsonrpc":"2.0","method":"eth_getBalance","params":{"a":1},"id":3}')).json();
  t.equal(known.id, 3);
  t.equal(known.error.code, -32602);
  const denied = (await post(sy.url, '{"jsonrpc":"2.0","method":"anvil_mine","params":{"a":1},"id":4}')).json();
  t.equal(denied.id, 4);
  t.equal(denied.error.code, -32601, 'a denied method is reported as such before its params');
  const local = (await post(sy.url, '{"jsonrpc":"2.0","method":"eth_chainId","params":"x","id":5}')).json();
  t.equal(local.error.code, -32602, 'locally answered methods judge params too');
});
