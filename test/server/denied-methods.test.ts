/**
 * Method policy (SPEC 4.6, docs/routing.md "Method policy"): methods outside the default allow-list get geth's
 * -32601 and never reach a node. Counted at the node side by a counting proxy in front of a real
 * anvil (anvil itself would happily mine, set balances and sign). `methods.deny`, `methods.allow`
 * and `methods.extensions` (names and `prefix*`) change the list; extensions reach the node and the
 * node's own answer comes back verbatim.
 */
import t from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { startCountingProxy, type CountingProxy } from '../helpers/counting-proxy.js';
import { post } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';

const anvil = await startAnvil();
t.teardown(() => anvil.stop());

const DENIED = [
  'admin_peers',
  'admin_addPeer',
  'personal_sign',
  'personal_unlockAccount',
  'debug_setHead',
  'anvil_mine',
  'anvil_setBalance',
  'anvil_impersonateAccount',
  'evm_mine',
  'evm_snapshot',
  'eth_sendTransaction',
  'eth_sign',
  'eth_signTransaction',
  'eth_signTypedData_v4',
  'miner_start',
  'engine_newPayloadV1',
  'hardhat_mine',
  // Not methods at all, or near misses of allowed ones: unknown is refused too.
  'ETH_BLOCKNUMBER',
  'eth_getBalance ',
  'eth_getbalance',
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  'eth_',
];
const ADDRESS = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';
/** What the node may see from a Switchyard with the default policy: its own head polls and the control call. */
const SWITCHYARD_OWN = new Set(['eth_chainId', 'eth_blockNumber', 'eth_getBlockByNumber']);

function notAvailable(o: any, method: string): boolean {
  return o?.error?.code === -32601 && o.error.message === `the method ${method} does not exist/is not available`;
}

const sawNone = (proxy: CountingProxy, methods: string[]): string[] =>
  proxy.calls.filter((c) => methods.includes(c.method)).map((c) => c.method);

t.test('default policy: denied methods get -32601 and never reach the node', async (t) => {
  const proxy = await startCountingProxy(t, anvil.url);
  const sy = await startSwitchyard(t, { upstreams: [{ name: 'a', url: proxy.url }] });

  for (const method of DENIED) {
    const params =
      method === 'anvil_setBalance' ? [ADDRESS, '0x1'] : method === 'personal_sign' ? ['0xdead', ADDRESS] : [];
    const r = await post(sy.url, { jsonrpc: '2.0', id: 7, method, params });
    t.equal(r.status, 200, `${method}: HTTP 200 (an answer produced by processing)`);
    t.ok(
      notAvailable(r.json(), method),
      `${JSON.stringify(method)}: -32601 "the method ${method} does not exist/is not available"`,
    );
    t.equal(r.json().id, 7, 'id echoed');
  }
  const batch = await post(
    sy.url,
    DENIED.map((method, i) => ({ jsonrpc: '2.0', id: i, method, params: [] })),
  );
  t.equal(batch.json().length, DENIED.length);
  t.ok(
    batch.json().every((o: any, i: number) => o.id === i && notAvailable(o, DENIED[i]!)),
    'in a batch too, each in its slot',
  );
  // Notifications are executed, not answered: a denied one must still not be executed.
  for (const method of DENIED) {
    const r = await post(sy.url, { jsonrpc: '2.0', method, params: [] });
    t.equal(r.text, '', `${method} as a notification: no answer`);
  }

  // The control: an allowed read does reach the node through the same proxy (the count works).
  const mark = proxy.mark();
  const ok = await post(sy.url, { jsonrpc: '2.0', id: 1, method: 'eth_getBalance', params: [ADDRESS, 'latest'] });
  t.match(ok.json().result, /^0x[0-9a-f]+$/, 'eth_getBalance answered');
  t.equal(proxy.count('eth_getBalance', undefined, mark), 1, 'and the node saw it');

  t.same(sawNone(proxy, DENIED), [], 'the node saw none of the denied methods');
  const unexpected = [...new Set(proxy.calls.map((c) => c.method))].filter(
    (m) => !SWITCHYARD_OWN.has(m) && m !== 'eth_getBalance',
  );
  t.same(unexpected, [], "the node saw nothing but Switchyard's own head polls and the control call");
});

t.test('methods.deny, methods.allow and methods.extensions', async (t) => {
  const proxy = await startCountingProxy(t, anvil.url);
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'a', url: proxy.url }],
    methods: {
      deny: ['eth_getLogs', 'eth_getStorage*', 'sapphire_internal'],
      allow: ['txpool_status', 'eth_sign', 'eth_sendTransaction'],
      extensions: ['sapphire_*', 'oasis_callDataPublicKey'],
    },
  });
  const plain = await startSwitchyard(t, { upstreams: [{ name: 'a', url: proxy.url }] });
  const one = async (url: string, method: string, params: unknown[] = []): Promise<any> =>
    (await post(url, { jsonrpc: '2.0', id: 1, method, params })).json();

  t.ok(
    notAvailable(await one(sy.url, 'eth_getLogs', [{ fromBlock: '0x0', toBlock: '0x0' }]), 'eth_getLogs'),
    'deny by name: a default method refused',
  );
  t.ok(
    notAvailable(await one(sy.url, 'eth_getStorageAt', [ADDRESS, '0x0', 'latest']), 'eth_getStorageAt'),
    'deny by prefix',
  );
  t.equal(proxy.count('eth_getLogs') + proxy.count('eth_getStorageAt'), 0, 'neither reached the node');
  t.ok(
    Array.isArray((await one(plain.url, 'eth_getLogs', [{ fromBlock: '0x0', toBlock: '0x0' }])).result),
    'while the default policy forwards eth_getLogs',
  );

  const pool = await one(sy.url, 'txpool_status');
  t.same(
    Object.keys(pool.result ?? {}).sort(),
    ['pending', 'queued'],
    'allow: txpool_status is forwarded and answered by the node',
  );
  t.equal(proxy.count('txpool_status'), 1, 'the node saw it once');
  t.ok(notAvailable(await one(plain.url, 'txpool_status'), 'txpool_status'), 'not allowed by default');
  t.equal(proxy.count('txpool_status'), 1, 'and then not forwarded');

  t.ok(
    notAvailable(await one(sy.url, 'eth_sign', [ADDRESS, '0xdead']), 'eth_sign'),
    'methods acting with a node key are refused even when allowed',
  );
  t.ok(
    notAvailable(await one(sy.url, 'eth_sendTransaction', [{ from: ADDRESS, to: ADDRESS }]), 'eth_sendTransaction'),
    'eth_sendTransaction too',
  );
  t.equal(proxy.count('eth_sign') + proxy.count('eth_sendTransaction'), 0, 'the node never signed anything');

  // Extensions: anvil does not know them and says so; that answer is the node's, verbatim.
  for (const method of ['sapphire_callEncrypted', 'oasis_callDataPublicKey']) {
    const direct = (await post(anvil.url, { jsonrpc: '2.0', id: 1, method, params: ['0x01'] })).json();
    const viaSy = await one(sy.url, method, ['0x01']);
    t.ok(direct.error, `anvil answers ${method} with an error of its own`);
    t.same(viaSy.error, direct.error, `${method}: forwarded, the node's error passed through verbatim`);
    t.ok(proxy.count(method) >= 1, `${method} reached the node`);
    t.ok(notAvailable(await one(plain.url, `${method}2`), `${method}2`), 'not an extension without the config');
  }
  const before = proxy.count('sapphire_callEncrypted');
  await one(sy.url, 'sapphire_callEncrypted', ['0x01']);
  t.ok(
    proxy.count('sapphire_callEncrypted') > before,
    'an extension answer is never cached: the same call reaches the node again',
  );
  t.ok(notAvailable(await one(sy.url, 'sapphire_internal'), 'sapphire_internal'), 'deny wins over an extension prefix');
  t.equal(proxy.count('sapphire_internal'), 0);
});
