// routing.maxLogsBlockRange: an eth_getLogs over more blocks than the cap is split into chunks
// and merged in order, and returns exactly what the node returns for the whole range; with
// splitting off (or too many chunks) it is refused with -32602 naming the cap.

import t from 'tap';
import { DEV_ADDRESS, startAnvil } from '../helpers/anvil.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { get, post } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { pingBytecode } from '../clients/fixtures/contract.js';

const PING = '0x' + '00'.repeat(4); // any 4-byte selector: the contract emits for any 36-byte calldata

async function rpc(url: string, method: string, params: unknown[]): Promise<any> {
  const r = (await post(url, { jsonrpc: '2.0', id: 1, method, params })).json();
  if (r.error) throw new Error(`${method}: ${JSON.stringify(r.error)}`);
  return r.result;
}

/** The raw text of `result` in a response body, byte for byte. */
function resultText(body: string): string {
  const at = body.indexOf('"result":');
  return body.slice(at + 9, body.lastIndexOf('}'));
}

t.test('a range over the cap is split and merged: the same answer as the node for the whole range', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  // 12 logs over ~30 blocks: a ping in every block from 2 on, with empty blocks between some.
  // anvil mines each sent transaction; the receipt is awaited so the next one lands in a later block.
  const mined = (hash: string): Promise<{ contractAddress: string | null }> =>
    waitFor(`receipt ${hash}`, () => rpc(anvil.url, 'eth_getTransactionReceipt', [hash]).then((r) => r ?? undefined));
  const contract = (
    await mined(await rpc(anvil.url, 'eth_sendTransaction', [{ from: DEV_ADDRESS, data: pingBytecode() }]))
  ).contractAddress!;
  for (let i = 0; i < 12; i++) {
    await mined(
      await rpc(anvil.url, 'eth_sendTransaction', [
        { from: DEV_ADDRESS, to: contract, data: PING + i.toString(16).padStart(64, '0') },
      ]),
    );
    if (i % 3 === 0) await rpc(anvil.url, 'anvil_mine', ['0x2']);
  }
  const head = Number.parseInt(await rpc(anvil.url, 'eth_blockNumber', []), 16);
  const filter = { fromBlock: '0x0', toBlock: `0x${head.toString(16)}`, address: contract };
  const direct = await post(anvil.url, { jsonrpc: '2.0', id: 1, method: 'eth_getLogs', params: [filter] });
  t.equal((JSON.parse(direct.text).result as unknown[]).length, 12, 'the node has 12 logs in the range');

  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'node-a', url: anvil.url }],
    routing: { maxLogsBlockRange: 4, maxLogsChunks: 50 },
  });
  await waitFor(
    'switchyard at the head',
    async () => (await rpc(sy.url, 'eth_blockNumber', [])) === `0x${head.toString(16)}`,
  );
  const via = await post(sy.url, { jsonrpc: '2.0', id: 1, method: 'eth_getLogs', params: [filter] });
  t.equal(resultText(via.text), resultText(direct.text), 'byte for byte what the node answers for the whole range');
  const chunks = Math.ceil((head + 1) / 4);
  const m = (await get(`${sy.adminUrl}/metrics`)).text;
  t.equal(
    metricSamples(m, 'switchyard_upstream_calls_total', { method: 'eth_getLogs' }).reduce((a, b) => a + b, 0),
    chunks,
    `${chunks} chunk calls reached the node`,
  );
  t.same(metricSamples(m, 'switchyard_calls_total', { method: 'eth_getLogs' }), [1], 'the client made one call');

  // A sub-range inside the cap goes as it is.
  const small = { ...filter, fromBlock: '0x2', toBlock: '0x4' };
  const d2 = await post(anvil.url, { jsonrpc: '2.0', id: 1, method: 'eth_getLogs', params: [small] });
  t.equal(
    resultText((await post(sy.url, { jsonrpc: '2.0', id: 1, method: 'eth_getLogs', params: [small] })).text),
    resultText(d2.text),
  );
});

t.test('splitting off, or too many chunks: -32602 naming the cap', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  await rpc(anvil.url, 'anvil_mine', ['0x20']);
  const off = await startSwitchyard(t, {
    upstreams: [{ name: 'node-a', url: anvil.url }],
    routing: { maxLogsBlockRange: 10, splitLogsRange: false },
  });
  const over = { fromBlock: '0x0', toBlock: '0x14' };
  const r1 = (await post(off.url, { jsonrpc: '2.0', id: 1, method: 'eth_getLogs', params: [over] })).json();
  t.equal(r1.error?.code, -32602);
  t.match(r1.error?.message, /21 blocks, at most 10 allowed/);
  const within = (
    await post(off.url, {
      jsonrpc: '2.0',
      id: 2,
      method: 'eth_getLogs',
      params: [{ fromBlock: '0x0', toBlock: '0x9' }],
    })
  ).json();
  t.same(within.result, [], 'within the cap: answered');
  const few = await startSwitchyard(t, {
    upstreams: [{ name: 'node-a', url: anvil.url }],
    routing: { maxLogsBlockRange: 5, maxLogsChunks: 2 },
  });
  const r2 = (await post(few.url, { jsonrpc: '2.0', id: 1, method: 'eth_getLogs', params: [over] })).json();
  t.equal(r2.error?.code, -32602);
  t.match(r2.error?.message, /at most 10 allowed/);
});
