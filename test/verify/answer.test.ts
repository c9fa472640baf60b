/**
 * The verification rules (verify/) against real anvil blocks of every hardfork anvil can produce:
 * each header hashes to its `hash`, each full block's transactions (types 0, 1 and 2) to their
 * hashes and root, and each block's receipts to the root its header holds. The ordered trie is held
 * to @ethereumjs/mpt's roots for 0 to 300 items (none empty: an empty value is a deletion there). A changed field of any kind makes the check fail.
 * Every verdict is the same read from the answer's parsed value (as Switchyard reads it) and from its text.
 */
import t from 'tap';
import { MerklePatriciaTrie } from '@ethereumjs/mpt';
import { RLP } from '@ethereumjs/rlp';
import { checkAnswer as check } from '../../src/verify/answer.js';
import { hexOf } from '../../src/verify/fields.js';
import { orderedTrieRoot } from '../../src/verify/trie.js';
import { DEV_ADDRESS, startAnvil } from '../helpers/anvil.js';
import { call } from '../helpers/rpc.js';

type Json = Record<string, any>;

/**
 * The verdict on a result's text, read as Switchyard reads it (from the value its answer was parsed
 * into: upstream/answers.ts) and from the text alone (an answer kept as bytes): the two must agree.
 */
function checkAnswer(method: string, params: string, text: string): ReturnType<typeof check> {
  const fromValue = check(method, params, text, JSON.parse(text));
  const fromText = check(method, params, text);
  if (JSON.stringify(fromValue) !== JSON.stringify(fromText))
    throw new Error(
      `${method}: ${JSON.stringify(fromValue)} from its value, ${JSON.stringify(fromText)} from its text`,
    );
  return fromValue;
}

t.test('the ordered trie root is the Merkle Patricia trie root of RLP(index) -> item', async (t) => {
  for (const n of [0, 1, 2, 15, 16, 17, 127, 128, 129, 255, 256, 300]) {
    const items = Array.from({ length: n }, (_, i) => new Uint8Array(1 + ((i * 7) % 90)).fill(i & 255));
    const trie = new MerklePatriciaTrie();
    for (let i = 0; i < n; i++) await trie.put(RLP.encode(i), items[i]!);
    t.equal(hexOf(orderedTrieRoot(items)), hexOf(trie.root()), `${n} items`);
  }
});

const HARDFORKS = ['frontier', 'homestead', 'byzantium', 'berlin', 'london', 'paris', 'shanghai', 'cancun', 'prague'];

for (const hardfork of HARDFORKS) {
  t.test(`anvil --hardfork ${hardfork}: its blocks, transactions and receipts verify`, async (t) => {
    const anvil = await startAnvil({ args: ['--hardfork', hardfork] });
    t.teardown(() => anvil.stop());
    await call(anvil.url, 'evm_setAutomine', [false]);
    const to = `0x${'22'.repeat(20)}`;
    const txs: Json[] = [
      { from: DEV_ADDRESS, to, value: '0x1', gasPrice: '0x77359400' },
      { from: DEV_ADDRESS, value: '0x0', gasPrice: '0x77359400', data: '0x6001600055' },
    ];
    if (hardfork !== 'frontier' && hardfork !== 'homestead' && hardfork !== 'byzantium')
      txs.push({
        from: DEV_ADDRESS,
        to,
        value: '0x2',
        gasPrice: '0x77359400',
        accessList: [{ address: to, storageKeys: [`0x${'00'.repeat(32)}`] }],
      });
    if (!['frontier', 'homestead', 'byzantium', 'berlin'].includes(hardfork))
      txs.push({ from: DEV_ADDRESS, to, value: '0x3' });
    for (const tx of txs) {
      const sent = await call(anvil.url, 'eth_sendTransaction', [tx]);
      t.notOk(sent.error, `sent ${JSON.stringify(sent.error ?? '')}`);
    }
    await call(anvil.url, 'evm_mine', []);
    for (const n of ['0x0', '0x1']) {
      const full = (await call(anvil.url, 'eth_getBlockByNumber', [n, true])).result as Json;
      const hashes = (await call(anvil.url, 'eth_getBlockByNumber', [n, false])).result as Json;
      const receipts = (await call(anvil.url, 'eth_getBlockReceipts', [n])).result as Json[];
      t.equal(full.transactions.length, n === '0x0' ? 0 : txs.length, `block ${n}: its transactions`);
      t.same(
        checkAnswer('eth_getBlockByNumber', `["${n}",true]`, JSON.stringify(full)),
        { is: 'verified' },
        `block ${n} with transactions`,
      );
      t.same(
        checkAnswer('eth_getBlockByNumber', `["${n}",false]`, JSON.stringify(hashes)),
        { is: 'verified' },
        `block ${n} with hashes`,
      );
      t.same(
        checkAnswer('eth_getBlockByHash', `["${full.hash}",true]`, JSON.stringify(full)),
        { is: 'verified' },
        `block ${n} by hash`,
      );
      const r = checkAnswer('eth_getBlockReceipts', `["${n}"]`, JSON.stringify(receipts));
      if (n === '0x0') t.same(r, { is: 'verified' }, 'no receipts in the genesis block');
      else
        t.same(
          r,
          { is: 'receipts', blockHash: full.hash, receiptsRoot: full.receiptsRoot },
          `block ${n}: its receipts make its receiptsRoot`,
        );
      for (const tx of full.transactions) {
        const byHash = (await call(anvil.url, 'eth_getTransactionByHash', [tx.hash])).result;
        t.same(
          checkAnswer('eth_getTransactionByHash', `["${tx.hash}"]`, JSON.stringify(byHash)),
          { is: 'verified' },
          `transaction of type ${tx.type}`,
        );
      }
      // Every header field, changed by one bit, no longer hashes to the block's hash.
      for (const [k, v] of Object.entries(hashes)) {
        if (typeof v !== 'string' || k === 'hash' || k === 'size' || k === 'totalDifficulty') continue;
        const forged = { ...hashes, [k]: flip(v) };
        t.equal(
          checkAnswer('eth_getBlockByNumber', `["${n}",false]`, JSON.stringify(forged)).is,
          'wrong',
          `block ${n}: ${k} changed`,
        );
      }
    }
    const full = (await call(anvil.url, 'eth_getBlockByNumber', ['0x1', true])).result as Json;
    for (const [i, tx] of full.transactions.entries()) {
      for (const k of ['nonce', 'gas', 'value', 'input', 'r', 's', 'to']) {
        if (typeof tx[k] !== 'string') continue;
        const forged = {
          ...full,
          transactions: full.transactions.map((x: Json, j: number) => (j === i ? { ...x, [k]: flip(x[k]) } : x)),
        };
        t.equal(
          checkAnswer('eth_getBlockByNumber', '["0x1",true]', JSON.stringify(forged)).is,
          'wrong',
          `transaction ${i} (type ${tx.type}): ${k} changed`,
        );
      }
    }
    const dropped = { ...full, transactions: full.transactions.slice(1) };
    t.equal(
      checkAnswer('eth_getBlockByNumber', '["0x1",true]', JSON.stringify(dropped)).is,
      'wrong',
      'a transaction left out',
    );
    const padded = { ...full, fooRoot: `0x${'00'.repeat(32)}` };
    t.equal(
      checkAnswer('eth_getBlockByNumber', '["0x1",true]', JSON.stringify(padded)).is,
      'unverified',
      'an unknown member',
    );
  });
}

/** The hex text with its last digit changed ("0x" becomes "0x01"). */
function flip(v: string): string {
  if (v === '0x') return '0x01';
  const last = v.at(-1)!;
  return v.slice(0, -1) + (last === '1' ? '2' : '1');
}
