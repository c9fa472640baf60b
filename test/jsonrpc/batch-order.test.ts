// A batch of 50 mixed calls is split, each call answered on its own, and the answers come back in
// request order (order from the slot, never from ids: the ids here run backwards). Every forwarded
// answer equals what the node itself says to the same call.

import t from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { call, post } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

const HEAD = 20;

const anvil = await startAnvil();
t.teardown(() => anvil.stop());

// Distinct balances, so an answer in the wrong slot cannot look right; then blocks to read.
const addresses = Array.from({ length: 8 }, (_, i) => `0x${(i + 1).toString(16).padStart(40, 'a')}`);
for (const [i, a] of addresses.entries()) {
  const r = await call(anvil.url, 'anvil_setBalance', [a, `0x${((i + 1) * 1_000_003).toString(16)}`]);
  if (r.error) throw new Error(`anvil_setBalance: ${JSON.stringify(r.error)}`);
}
await call(anvil.url, 'anvil_mine', [`0x${HEAD.toString(16)}`]);

const sy = await startSwitchyard(t, { upstreams: [{ name: 'a', url: anvil.url }] });
await waitFor(
  'switchyard at the node head',
  async () => (await call(sy.url, 'eth_blockNumber')).result === `0x${HEAD.toString(16)}`,
);

type Element =
  | { kind: 'call'; method: string; params: unknown[] }
  | { kind: 'notification'; method: string; params: unknown[] }
  | { kind: 'unknown'; method: string }
  /** `echo`: the id the error carries (null unless the element's own id was readable). */
  | { kind: 'invalid'; raw: unknown; echo: number | null };

function element(i: number): Element {
  switch (i % 10) {
    case 0:
    case 5:
      return { kind: 'call', method: 'eth_getBalance', params: [addresses[i % addresses.length], 'latest'] };
    case 1:
      return { kind: 'call', method: 'eth_getBlockByNumber', params: [`0x${(i % (HEAD + 6)).toString(16)}`, false] };
    case 2:
      return {
        kind: 'call',
        method: 'eth_getBlockByNumber',
        params: [`0x${((i * 7) % (HEAD + 1)).toString(16)}`, true],
      };
    case 3:
      return { kind: 'call', method: 'eth_chainId', params: [] };
    case 4:
      return { kind: 'unknown', method: `nope_${i}` };
    case 6:
      if (i % 30 === 6) return { kind: 'invalid', raw: i, echo: null };
      if (i % 30 === 16)
        return { kind: 'invalid', raw: { jsonrpc: '2.0', id: { slot: i }, method: 'eth_chainId' }, echo: null };
      // A readable id on an otherwise bad request is echoed (JSON-RPC 2.0: null only when the id can't be read).
      return { kind: 'invalid', raw: { jsonrpc: '1.0', id: i, method: 'eth_chainId' }, echo: i };
    case 7:
      return {
        kind: 'call',
        method: 'eth_getBlockByNumber',
        params: [['latest', 'earliest', `0x${(HEAD + 3).toString(16)}`][i % 3], false],
      };
    case 8:
      return i === 18
        ? { kind: 'notification', method: 'eth_blockNumber', params: [] }
        : { kind: 'call', method: 'eth_blockNumber', params: [] };
    default:
      return { kind: 'call', method: 'eth_getTransactionCount', params: [addresses[i % addresses.length], 'latest'] };
  }
}

t.test('50 mixed calls: each answered in its slot, equal to the node direct', async (t) => {
  const elements = Array.from({ length: 50 }, (_, i) => element(i));
  const idOf = (i: number) => 1000 - i;
  const batch = elements.map((e, i) => {
    if (e.kind === 'invalid') return e.raw;
    if (e.kind === 'notification') return { jsonrpc: '2.0', method: e.method, params: e.params };
    if (e.kind === 'unknown') return { jsonrpc: '2.0', id: idOf(i), method: e.method, params: [] };
    return { jsonrpc: '2.0', id: idOf(i), method: e.method, params: e.params };
  });
  const r = await post(sy.url, batch);
  t.equal(r.status, 200);
  const answers = r.json() as any[];
  const expected = elements.map((e, i) => ({ e, i })).filter(({ e }) => e.kind !== 'notification');
  t.equal(answers.length, expected.length, 'one answer per non-notification element');
  t.equal(answers.length, 49);

  const nulls = { seen: 0 };
  for (const [k, { e, i }] of expected.entries()) {
    const a = answers[k];
    const where = `slot ${i} (${e.kind}${'method' in e ? ` ${e.method}` : ''})`;
    if (e.kind === 'invalid') {
      t.equal(a.id, e.echo, where);
      t.equal(a.error?.code, -32600, where);
      t.notOk('result' in a, where);
      continue;
    }
    t.equal(a.id, idOf(i), where);
    if (e.kind === 'unknown') {
      t.equal(a.error?.code, -32601, where);
      t.equal(a.error?.message, `the method ${e.method} does not exist/is not available`, where);
      continue;
    }
    const direct = await call(anvil.url, e.method, e.params);
    t.notOk(a.error, `${where}: no error`);
    t.strictSame(a.result, direct.result, where);
    if (direct.result === null) nulls.seen++;
  }
  t.ok(nulls.seen > 0, 'some blocks beyond the head answered null, as the node does');
  t.equal(
    new Set(answers.filter((a) => a.result?.hash).map((a) => a.result.hash)).size > 5,
    true,
    'several different blocks were read',
  );
});
