/**
 * Differential: every method the table routes by a block parameter, with every form of that
 * parameter (number, tag, bare hash, {blockHash}, {blockNumber}), asked of Switchyard and of the
 * same anvil directly: the answers (result or error) must be deep-equal. A method whose block
 * parameter Switchyard reads wrongly (refusing a form the node takes) shows up here. Routed
 * reads without a block parameter, and eth_getLogs' filter forms, are compared too.
 */
import t from 'tap';
import { METHODS } from '../../src/methods/table.js';
import { DEV_ADDRESS, startAnvil } from '../helpers/anvil.js';
import { call } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

/** anvil's second dev account. */
const OTHER = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const B = Symbol('block');
type Template = unknown[];

/** Params for each method with a block parameter; B marks where the block goes. */
const WITH_BLOCK: Record<string, Template> = {
  eth_call: [{ to: DEV_ADDRESS, data: '0x' }, B],
  eth_createAccessList: [{ from: DEV_ADDRESS, to: OTHER, data: '0x' }, B],
  eth_estimateGas: [{ from: DEV_ADDRESS, to: OTHER, value: '0x1' }, B],
  eth_feeHistory: ['0x1', B, [50]],
  eth_getBalance: [DEV_ADDRESS, B],
  eth_getBlockByNumber: [B, false],
  eth_getBlockReceipts: [B],
  eth_getBlockTransactionCountByNumber: [B],
  eth_getCode: [DEV_ADDRESS, B],
  eth_getProof: [DEV_ADDRESS, [], B],
  eth_getStorageAt: [DEV_ADDRESS, '0x0', B],
  eth_getTransactionByBlockNumberAndIndex: [B, '0x0'],
  eth_getTransactionCount: [DEV_ADDRESS, B],
  eth_getUncleByBlockNumberAndIndex: [B, '0x0'],
  eth_getUncleCountByBlockNumber: [B],
  eth_simulateV1: [{ blockStateCalls: [{ calls: [{ from: DEV_ADDRESS, to: OTHER, value: '0x1' }] }] }, B],
  debug_traceCall: [{ from: DEV_ADDRESS, to: OTHER }, B, {}],
  debug_traceBlockByNumber: [B, {}],
  debug_getRawBlock: [B],
  debug_getRawHeader: [B],
  debug_getRawReceipts: [B],
};

const strip = (r: { id?: unknown; jsonrpc?: unknown }): unknown => {
  const { id: _id, jsonrpc: _v, ...rest } = r;
  return rest;
};

t.test('Switchyard answers as the node does for every block-parameter form', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  // Block 1 holds a transfer (receipts, a transaction by index); block 2 is the head.
  const sent = await call(anvil.url, 'eth_sendTransaction', [{ from: DEV_ADDRESS, to: OTHER, value: '0x10' }]);
  t.ok(sent.result, 'a transfer in block 1');
  await call(anvil.url, 'evm_mine', []);
  const block1 = (await call(anvil.url, 'eth_getBlockByNumber', ['0x1', false])).result as { hash: string };
  const sy = await startSwitchyard(t, { upstreams: [{ name: 'anvil', url: anvil.url, tags: ['archive', 'debug'] }] });
  await waitFor('Switchyard at the head', async () => (await call(sy.url, 'eth_blockNumber')).result === '0x2');

  const forms: [string, unknown][] = [
    ['number', '0x1'],
    ['latest', 'latest'],
    ['earliest', 'earliest'],
    ['finalized', 'finalized'],
    ['hash', block1.hash],
    ['{blockHash}', { blockHash: block1.hash }],
    ['{blockNumber}', { blockNumber: '0x1' }],
  ];
  const routedWithBlock = Object.entries(METHODS)
    .filter(([, s]) => s.handling === 'read' && s.block !== undefined)
    .map(([m]) => m);
  t.same(
    routedWithBlock.filter((m) => !(m in WITH_BLOCK)),
    [],
    'every routed method with a block parameter is compared',
  );
  let compared = 0;
  for (const method of routedWithBlock) {
    const template = WITH_BLOCK[method]!;
    t.equal(template.indexOf(B), METHODS[method]!.block, `${method}: the table's block index`);
    for (const [form, value] of forms) {
      const params = template.map((p) => (p === B ? value : p));
      const [viaSy, direct] = await Promise.all([call(sy.url, method, params), call(anvil.url, method, params)]);
      t.same(strip(viaSy), strip(direct), `${method} with ${form}`);
      compared++;
    }
  }
  t.equal(compared, routedWithBlock.length * forms.length);

  const txHash = sent.result as string;
  const others: Record<string, unknown[]> = {
    eth_blobBaseFee: [],
    eth_gasPrice: [],
    eth_maxPriorityFeePerGas: [],
    eth_getBlockByHash: [block1.hash, false],
    eth_getBlockTransactionCountByHash: [block1.hash],
    eth_getRawTransactionByHash: [txHash],
    eth_getTransactionByBlockHashAndIndex: [block1.hash, '0x0'],
    eth_getTransactionByHash: [txHash],
    eth_getTransactionReceipt: [txHash],
    eth_getUncleByBlockHashAndIndex: [block1.hash, '0x0'],
    eth_getUncleCountByBlockHash: [block1.hash],
    eth_getLogs: [{ fromBlock: '0x0', toBlock: 'latest' }],
    eth_protocolVersion: [],
    eth_syncing: [],
    net_peerCount: [],
    web3_clientVersion: [],
    web3_sha3: ['0x68656c6c6f'],
    debug_traceTransaction: [txHash, {}],
    debug_traceBlockByHash: [block1.hash, {}],
    debug_getRawTransaction: [txHash],
  };
  const routedWithout = Object.entries(METHODS)
    .filter(([, s]) => s.handling === 'read' && s.block === undefined)
    .map(([m]) => m);
  t.same(
    routedWithout.filter((m) => !(m in others)),
    [],
    'every other routed read is compared',
  );
  for (const method of routedWithout) {
    const params = others[method]!;
    const [viaSy, direct] = await Promise.all([call(sy.url, method, params), call(anvil.url, method, params)]);
    t.same(strip(viaSy), strip(direct), method);
  }
  const filters: [string, object][] = [
    ['blockHash', { blockHash: block1.hash }],
    ['numbers', { fromBlock: '0x1', toBlock: '0x2' }],
    ['tags', { fromBlock: 'earliest', toBlock: 'latest' }],
    ['{blockNumber}', { fromBlock: { blockNumber: '0x1' } }],
  ];
  for (const [form, filter] of filters) {
    const [viaSy, direct] = await Promise.all([
      call(sy.url, 'eth_getLogs', [filter]),
      call(anvil.url, 'eth_getLogs', [filter]),
    ]);
    t.same(strip(viaSy), strip(direct), `eth_getLogs with ${form}`);
  }
});
