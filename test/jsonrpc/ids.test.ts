// Ids are echoed byte for byte (SPEC 3.1): the raw id text of the request appears unchanged in the
// raw response text, for single calls and inside batches. Ids never decide order: a batch whose
// calls share one id is answered in request order, each slot with its own answer.

import t from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { call, post } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';

const anvil = await startAnvil();
t.teardown(() => anvil.stop());
const sy = await startSwitchyard(t, { upstreams: [{ name: 'a', url: anvil.url }] });

/** Raw id texts that a JS number or a JSON.stringify round trip would change. */
const IDS = [
  '1',
  '"1"',
  '12345678901234567890',
  '1.5',
  '1e3',
  '-0',
  'null',
  '""',
  '"é ü 中文 🚀"',
  '"\\u00e9\\ud83d\\ude80"',
  '0.10',
  '-12345678901234567890123',
  '1E+2',
  '"a\\"b\\\\c"',
];

t.test('single calls echo the id text exactly', async (t) => {
  for (const id of IDS) {
    const r = await post(sy.url, `{"jsonrpc":"2.0","id":${id},"method":"eth_chainId","params":[]}`);
    t.equal(r.status, 200, `id ${id}: status`);
    t.equal(r.text, `{"jsonrpc":"2.0","id":${id},"result":"0xba"}`, `id ${id}: exact text`);
  }
});

t.test('ids survive whitespace around them and any member order', async (t) => {
  const r = await post(
    sy.url,
    '{ "method" : "net_version" , "id" :  12345678901234567890 ,"params":[], "jsonrpc":"2.0" }',
  );
  t.equal(r.text, '{"jsonrpc":"2.0","id":12345678901234567890,"result":"186"}');
});

t.test('an error answer echoes the id text too', async (t) => {
  const r = await post(sy.url, '{"jsonrpc":"2.0","id":12345678901234567890,"method":"no_such_method","params":[]}');
  t.match(r.text, /^\{"jsonrpc":"2\.0","id":12345678901234567890,"error":\{"code":-32601,/);
  const p = await post(sy.url, '{"jsonrpc":"2.0","id":1.5,"method":"eth_chainId","params":{}}');
  t.match(p.text, /^\{"jsonrpc":"2\.0","id":1\.5,"error":\{"code":-32602,/);
});

t.test('a batch echoes every id text exactly, in request order', async (t) => {
  const body = `[${IDS.map((id) => `{"jsonrpc":"2.0","id":${id},"method":"eth_chainId","params":[]}`).join(',')}]`;
  const r = await post(sy.url, body);
  t.equal(r.status, 200);
  t.equal(r.text, `[${IDS.map((id) => `{"jsonrpc":"2.0","id":${id},"result":"0xba"}`).join(',')}]`);
});

t.test('an object or array id gets -32600 with id null', async (t) => {
  for (const id of ['{"a":1}', '[1]', '[]', '{}']) {
    const r = await post(sy.url, `{"jsonrpc":"2.0","id":${id},"method":"eth_chainId","params":[]}`);
    t.equal(r.status, 200);
    const body = r.json();
    t.equal(body.id, null, `id ${id}`);
    t.equal(body.error.code, -32600, `id ${id}`);
    t.notOk('result' in body);
  }
  const b = await post(
    sy.url,
    '[{"jsonrpc":"2.0","id":{"x":1},"method":"eth_chainId"},{"jsonrpc":"2.0","id":"ok","method":"eth_chainId"}]',
  );
  t.equal(b.text.slice(0, 25), '[{"jsonrpc":"2.0","id":nu');
  const arr = b.json();
  t.equal(arr.length, 2);
  t.equal(arr[0].id, null);
  t.equal(arr[0].error.code, -32600);
  t.strictSame(arr[1], { jsonrpc: '2.0', id: 'ok', result: '0xba' });
});

t.test('duplicate ids: answers follow request order, not ids', async (t) => {
  const blockNumber = (await call(anvil.url, 'eth_blockNumber')).result as string;
  const r = await post(
    sy.url,
    '[{"jsonrpc":"2.0","id":7,"method":"eth_chainId"},{"jsonrpc":"2.0","id":7,"method":"net_version"},{"jsonrpc":"2.0","id":7,"method":"eth_blockNumber"},{"jsonrpc":"2.0","id":7,"method":"net_listening"}]',
  );
  t.equal(r.status, 200);
  t.equal(
    r.text,
    `[{"jsonrpc":"2.0","id":7,"result":"0xba"},{"jsonrpc":"2.0","id":7,"result":"186"},{"jsonrpc":"2.0","id":7,"result":"${blockNumber}"},{"jsonrpc":"2.0","id":7,"result":true}]`,
  );
});

t.test('duplicate ids across forwarded calls keep each slot its own answer', async (t) => {
  const addrs = [
    '0x0000000000000000000000000000000000000001',
    '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
    '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
  ];
  const want = await Promise.all(
    addrs.map(async (a) => (await call(anvil.url, 'eth_getBalance', [a, 'latest'])).result as string),
  );
  t.not(want[0], want[1], 'the answers differ, so a swap would show');
  const r = await post(
    sy.url,
    JSON.stringify(addrs.map((a) => ({ jsonrpc: '2.0', id: 'same', method: 'eth_getBalance', params: [a, 'latest'] }))),
  );
  t.equal(r.text, `[${want.map((w) => `{"jsonrpc":"2.0","id":"same","result":"${w}"}`).join(',')}]`);
});
