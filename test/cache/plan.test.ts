/**
 * Cacheability, unit by unit: which class a call gets (immutable at a finalized number or a block
 * hash, head-scoped at an unfinalized number, nothing for tags, future blocks, open log ranges,
 * methods without a cache entry and extensions), how keys are canonicalised so equivalent calls
 * share an entry, and the memory store's rules (a reorg hides head entries, not immutable ones;
 * the byte bound; one oversized answer is not kept). Coalescing shares one promise per key.
 */
import t from 'tap';
import { canonical, planCache, type ChainView } from '../../src/cache/plan.js';
import { MemoryStore } from '../../src/cache/store.js';
import { Coalescer, Shared } from '../../src/cache/coalesce.js';
import { METHODS } from '../../src/methods/table.js';
import { MethodPolicy } from '../../src/methods/policy.js';

const view: ChainView = { head: 100, finalized: 90 };
const HASH = `0x${'ab'.repeat(32)}`;
const ADDR = '0x00000000000000000000000000000000000000aa';

function plan(method: string, params: unknown[], v: ChainView = view) {
  const spec = METHODS[method];
  if (spec === undefined) throw new Error(`${method} not in the table`);
  return planCache(method, spec, params, v);
}
const cls = (method: string, params: unknown[], v: ChainView = view) => plan(method, params, v)?.cls ?? null;

t.test('block numbers: finalized is immutable, unfinalized <= head is head-scoped, beyond head is never', async (t) => {
  t.equal(cls('eth_getBlockByNumber', ['0x0', false]), 'immutable', 'genesis');
  t.equal(cls('eth_getBlockByNumber', ['0x5a', false]), 'immutable', 'exactly the finalized height (90)');
  t.equal(cls('eth_getBlockByNumber', ['0x5b', true]), 'head', 'one above finalized');
  t.equal(cls('eth_getBlockByNumber', ['0x64', false]), 'head', 'the head itself');
  t.equal(cls('eth_getBlockByNumber', ['0x65', false]), null, 'one beyond the head');
  t.equal(cls('eth_getBalance', [ADDR, '0x5a']), 'immutable', 'state read at a finalized number');
  t.equal(cls('eth_getBalance', [ADDR, '0x5b']), 'head');
  t.equal(cls('eth_getStorageAt', [ADDR, '0x0', '0x1']), 'immutable', 'block parameter at index 2');
  t.equal(cls('eth_getStorageAt', [ADDR, '0x0', '0x99']), null, 'index 2 beyond head');
  t.equal(cls('eth_feeHistory', ['0x4', '0x10', [25, 75]]), 'immutable', 'feeHistory newest block at index 1');

  const head = plan('eth_getBlockByNumber', ['0x5b', false])!;
  t.equal(
    head.head,
    100,
    'a head-scoped plan carries the head it was made under: the store serves it only for that head',
  );
  const later = plan('eth_getBlockByNumber', ['0x5b', false], { head: 101, finalized: 90 })!;
  t.equal(later.head, 101, 'so the next head looks in its own table');
  t.equal(
    later.shareKey,
    head.shareKey,
    'calls in flight for that block share one upstream call across the head change',
  );
  t.equal(head.shareKey, head.key, 'one string for both (the block is named: no head in either)');
  t.notMatch(head.shareKey, /@/);
  const gas = plan('eth_gasPrice', [])!;
  t.not(
    gas.shareKey,
    plan('eth_gasPrice', [], { head: 101, finalized: 90 })!.shareKey,
    'an answer that follows the head is shared per head',
  );
  const noBlock = plan('eth_estimateGas', [{ to: ADDR }])!;
  t.match(noBlock.shareKey, /@100:/, "a left-out block is the node's latest: shared per head");
  const fin = plan('eth_getBlockByNumber', ['0x5a', false])!;
  t.equal(
    fin.key,
    plan('eth_getBlockByNumber', ['0x5a', false], { head: 500, finalized: 400 })!.key,
    'an immutable key does not depend on the head',
  );
  t.notMatch(fin.key, /@/, 'immutable keys carry no head');
});

t.test('tags and malformed block parameters are never cached', async (t) => {
  for (const tag of ['pending', 'safe', 'finalized', 'earliest', 'latest']) {
    t.equal(cls('eth_getBlockByNumber', [tag, false]), null, `eth_getBlockByNumber ${tag}`);
    t.equal(cls('eth_getBalance', [ADDR, tag]), null, `eth_getBalance ${tag}`);
    t.equal(cls('eth_call', [{ to: ADDR }, tag]), null, `eth_call ${tag}`);
  }
  t.equal(cls('eth_getBalance', [ADDR, '0xzz']), null, 'not hex');
  t.equal(cls('eth_getBalance', [ADDR, 5]), null, 'a JS number is not a quantity');
  t.equal(cls('eth_getBalance', [ADDR, '0x']), null, 'empty quantity');
  t.equal(cls('eth_getBalance', [ADDR, null]), null, 'null block');
  t.equal(cls('eth_getBalance', [ADDR, '0x11111111111111111']), null, 'more than 64 bits');
});

t.test('EIP-1898 objects: {blockHash} is immutable, {blockNumber} follows the number', async (t) => {
  t.equal(cls('eth_getBalance', [ADDR, { blockHash: HASH }]), 'immutable');
  t.equal(cls('eth_call', [{ to: ADDR }, { blockHash: HASH, requireCanonical: true }]), 'immutable');
  t.equal(cls('eth_getBalance', [ADDR, { blockHash: '0x1234' }]), null, 'a short hash is malformed');
  t.equal(cls('eth_getBalance', [ADDR, { blockNumber: '0x1' }]), 'immutable');
  t.equal(cls('eth_getBalance', [ADDR, { blockNumber: '0x5b' }]), 'head');
  t.equal(cls('eth_getBalance', [ADDR, { blockNumber: 'pending' }]), null);
  t.equal(cls('eth_getBalance', [ADDR, {}]), null, 'an empty object names no block');
  t.equal(cls('eth_getBalance', [ADDR, [HASH]]), null, 'an array is not a block reference');
});

t.test('lookups by hash, transactions, head-scoped methods, optional blocks', async (t) => {
  t.equal(cls('eth_getBlockByHash', [HASH, false]), 'immutable');
  t.equal(cls('eth_getTransactionByBlockHashAndIndex', [HASH, '0x0']), 'immutable');
  t.equal(cls('eth_getBlockTransactionCountByHash', [HASH]), 'immutable');
  t.equal(cls('eth_getTransactionReceipt', [HASH]), 'tx', 'receipts: stored only once their block is final');
  t.equal(cls('eth_getTransactionByHash', [HASH]), 'tx');
  for (const m of ['eth_gasPrice', 'eth_maxPriorityFeePerGas', 'eth_blobBaseFee']) {
    const p = plan(m, [])!;
    t.equal(p.cls, 'head', m);
    t.match(p.shareKey, /@100:/, `${m}: shared per head`);
  }
  t.equal(
    cls('eth_call', [{ to: ADDR }]),
    'head',
    'eth_call without a block parameter is the node latest: head-scoped',
  );
  t.equal(cls('eth_estimateGas', [{ to: ADDR }]), 'head');
});

t.test('eth_getLogs: by its range or blockHash', async (t) => {
  t.equal(cls('eth_getLogs', [{ fromBlock: '0x1', toBlock: '0x5a' }]), 'immutable', 'whole range finalized');
  t.equal(cls('eth_getLogs', [{ fromBlock: '0x1', toBlock: '0x5b' }]), 'head', 'ends above finalized');
  t.equal(cls('eth_getLogs', [{ fromBlock: '0x5b', toBlock: '0x64' }]), 'head', 'all unfinalized <= head');
  t.equal(cls('eth_getLogs', [{ fromBlock: '0x1', toBlock: '0x65' }]), null, 'ends beyond head');
  t.equal(cls('eth_getLogs', [{ fromBlock: '0x1' }]), null, 'missing toBlock is the node latest');
  t.equal(cls('eth_getLogs', [{ toBlock: '0x5' }]), null, 'missing fromBlock');
  t.equal(cls('eth_getLogs', [{}]), null, 'no range at all');
  t.equal(cls('eth_getLogs', [{ fromBlock: '0x1', toBlock: 'finalized' }]), null, 'a tag end');
  t.equal(cls('eth_getLogs', [{ fromBlock: 'earliest', toBlock: '0x5' }]), null, 'a tag start');
  t.equal(cls('eth_getLogs', [{ blockHash: HASH }]), 'immutable', 'blockHash');
  t.equal(cls('eth_getLogs', [{ blockHash: HASH, address: ADDR, topics: [null, HASH] }]), 'immutable');
  t.equal(cls('eth_getLogs', [{ blockHash: '0xabc' }]), null, 'malformed blockHash');
  t.equal(cls('eth_getLogs', [{ blockHash: 7 }]), null, 'non-string blockHash');
  t.equal(cls('eth_getLogs', ['0x1']), null, 'not a filter object');
  t.equal(cls('eth_getLogs', [[{ fromBlock: '0x1', toBlock: '0x2' }]]), null, 'an array is not a filter object');
  t.equal(cls('eth_getLogs', []), null, 'no filter');
});

t.test('methods without a cache class, extensions and unknown methods are never cached', async (t) => {
  for (const [m, spec] of Object.entries(METHODS)) {
    if (spec.cache !== undefined) continue;
    t.equal(planCache(m, spec, ['0x1', '0x1', '0x1'], view), null, `${m} has no cache class`);
  }
  for (const m of [
    'eth_sendRawTransaction',
    'eth_newFilter',
    'eth_getFilterChanges',
    'eth_subscribe',
    'debug_traceTransaction',
    'debug_traceBlockByNumber',
    'eth_syncing',
    'eth_simulateV1',
  ]) {
    t.equal(METHODS[m]!.cache, undefined, `${m}: the table gives it no cache class`);
  }
  const policy = new MethodPolicy({ allow: ['custom_*'], deny: [], extensions: ['sapphire_*', 'eth_getBalance'] });
  for (const m of ['sapphire_callEncrypted', 'custom_read', 'eth_getBalance']) {
    const r = policy.resolve(m);
    t.ok(r, `${m} resolves`);
    t.equal(
      planCache(m, r!.spec, [ADDR, '0x1'], view),
      null,
      `${m}: an extension or allowed unknown method is never cached`,
    );
  }
  t.equal(
    policy.resolve('eth_getBalance')!.extension,
    true,
    'an extension named like a table method is an extension (uncached)',
  );
});

t.test('keys: sorted object keys and lower-cased hex, so equivalent calls share one entry', async (t) => {
  t.equal(
    canonical({ b: 1, a: '0xABCDEF', c: [true, null, 'Hello'] }),
    '{"a":"0xabcdef","b":1,"c":[true,null,"Hello"]}',
  );
  t.equal(canonical('0xDEADbeef'), '"0xdeadbeef"');
  t.equal(canonical('Pending'), '"Pending"', 'a non-hex string keeps its case');
  t.equal(canonical('0xG'), '"0xG"', 'not hex: unchanged');
  t.equal(canonical(null), 'null');
  t.equal(canonical(undefined), 'null', 'undefined (a hole) is written as null, never dropped');
  t.equal(canonical({ x: { z: 1, y: 2 } }), '{"x":{"y":2,"z":1}}', 'nested objects sorted too');

  const upper = `0x${ADDR.slice(2).toUpperCase()}`;
  t.equal(
    plan('eth_getBalance', [upper, '0x5'])!.key,
    plan('eth_getBalance', [ADDR, '0x5'])!.key,
    'address case does not matter',
  );
  t.equal(
    plan('eth_call', [{ to: ADDR, data: '0xABCD' }, '0x5'])!.key,
    plan('eth_call', [{ data: '0xabcd', to: upper }, '0x5'])!.key,
    'member order and hex case do not matter',
  );
  t.not(
    plan('eth_getBalance', [ADDR, '0x5'])!.key,
    plan('eth_getBalance', [ADDR, '0x6'])!.key,
    'another block: another entry',
  );
  t.not(
    plan('eth_getBalance', [ADDR, '0x5'])!.key,
    plan('eth_getTransactionCount', [ADDR, '0x5'])!.key,
    'another method: another entry',
  );
  t.equal(
    plan('eth_getBlockByHash', [HASH.toUpperCase().replace('0X', '0x'), false])!.key,
    plan('eth_getBlockByHash', [HASH, false])!.key,
    'block hash case',
  );
  t.not(
    plan('eth_getBlockByNumber', ['0x5', true])!.key,
    plan('eth_getBlockByNumber', ['0x5', false])!.key,
    'full and hashes-only blocks differ',
  );
});

t.test('MemoryStore: a reorg hides head entries, never immutable ones', async (t) => {
  const s = new MemoryStore(1_000_000);
  s.set('imm', '"a"', 'immutable', s.generation);
  s.set('head', '"b"', 'head', s.generation);
  t.equal(s.get('imm', 'immutable'), '"a"');
  t.equal(s.get('head', 'head'), '"b"');
  const before = s.generation;
  s.dropUnfinalized();
  t.equal(s.generation, before + 1, 'generation bumped');
  t.equal(s.get('head', 'head'), undefined, 'head entry gone after the reorg');
  t.equal(s.get('imm', 'immutable'), '"a"', 'immutable entry survives the reorg');
  s.set('late', '"c"', 'head', before);
  t.equal(s.get('late', 'head'), undefined, 'an answer fetched before the reorg is not kept after it');
  s.set('late-imm', '"d"', 'immutable', before);
  t.equal(s.get('late-imm', 'immutable'), '"d"', 'immutable answers are kept whatever the generation');
  s.set('fresh', '"e"', 'head', s.generation);
  t.equal(s.get('fresh', 'head'), '"e"', 'filled under the new generation: served');
});

t.test('MemoryStore: bounded by bytes, oversize entries not kept, disabled at 0', async (t) => {
  const max = 10_000;
  const s = new MemoryStore(max);
  s.set('big', 'x'.repeat(max / 10 + 1), 'immutable', 0);
  t.equal(s.get('big', 'immutable'), undefined, 'an entry over maxBytes/10 is not kept');
  s.set('ok', 'x'.repeat(500), 'immutable', 0);
  t.equal(s.get('ok', 'immutable'), 'x'.repeat(500), 'a smaller one is');
  let highest = 0;
  for (let i = 0; i < 500; i++) {
    s.set(`k${i}`, 'y'.repeat(100), 'immutable', 0);
    highest = Math.max(highest, s.stats().bytes);
  }
  t.ok(highest <= max, `bytes never above the bound after any of 500 sets (highest ${highest})`);
  const st = s.stats();
  t.ok(st.bytes <= max && st.bytes > max / 2, `bytes ${st.bytes} near but within ${max}`);
  t.ok(st.evictions > 0, `evictions counted (${st.evictions})`);
  t.equal(s.get('k499', 'immutable'), 'y'.repeat(100), 'the most recent entry is kept');
  t.equal(s.get('k0', 'immutable'), undefined, 'the least recently used went first');

  const off = new MemoryStore(0);
  off.set('a', '1', 'immutable', 0);
  t.equal(off.get('a', 'immutable'), undefined, 'maxBytes 0 keeps nothing');
  t.equal(off.stats().bytes, 0);
});

t.test('MemoryStore: head-scoped answers live in one table per head, apart from the LRU', async (t) => {
  const max = 40_000;
  const s = new MemoryStore(max);
  const g = s.generation;
  s.set('imm', '"a"', 'immutable', g);
  s.set('gas@10', '"0x1"', 'head', g, 10);
  t.equal(s.get('gas@10', 'head', 10), '"0x1"', 'a head-scoped answer is served for its head');
  t.equal(s.stats().entries, 2, 'both counted');
  s.set('gas@9', '"0x0"', 'head', g, 9);
  t.equal(s.get('gas@9', 'head', 9), undefined, 'an answer for an older head is not kept');
  s.set('gas@11', '"0x2"', 'head', g, 11);
  t.equal(s.get('gas@11', 'head', 11), '"0x2"', 'the newer head is served');
  t.equal(s.get('gas@10', 'head', 10), undefined, 'the older head table is dropped as a whole');
  t.equal(s.stats().entries, 2, 'so it no longer counts');
  t.equal(s.get('imm', 'immutable'), '"a"', 'immutable entries are untouched by head moves');

  // The head table holds at most a quarter of maxBytes; the LRU the rest.
  const before = s.stats().bytes;
  for (let i = 0; i < 500; i++) s.set(`bal${i}@11`, 'z'.repeat(100), 'head', g, 11);
  const kept = Array.from({ length: 500 }, (_, i) => s.get(`bal${i}@11`, 'head', 11)).filter(
    (v) => v !== undefined,
  ).length;
  t.ok(kept > 0 && kept < 500, `the head table stops at its share: ${kept} of 500 kept`);
  const added = s.stats().bytes - before;
  t.ok(added <= max / 4 && added > max / 4 - 1_000, `the head table fills up to max/4 and no further: ${added} bytes`);
  for (let i = 0; i < 500; i++) s.set(`imm${i}`, 'w'.repeat(100), 'immutable', g);
  t.ok(s.stats().bytes <= max, `the whole cache stays within maxBytes: ${s.stats().bytes}`);
  s.set('gas@12', '"0x3"', 'head', g, 12);
  t.equal(s.get('gas@12', 'head', 12), '"0x3"', 'a full table is replaced by the next head');
  t.equal(s.get('bal0@11', 'head', 11), undefined);
});

t.test('Coalescer: one claim per key while in flight', async (t) => {
  const c = new Coalescer<string>();
  let joins = 0;
  const a = c.claim('k', () => joins++);
  const b = c.claim('k', () => joins++);
  const b2 = c.claim('k', () => joins++);
  t.ok(a instanceof Shared, 'the first call owns the claim (it sends the call)');
  t.ok(b instanceof Promise && b2 instanceof Promise, 'identical calls join it and send nothing');
  t.equal(c.size, 1, 'one key in flight');
  const other = c.claim('other');
  t.ok(other instanceof Shared, 'another key is its own call');
  t.equal(c.size, 2);
  c.settle('k', a as Shared<string>, 'v');
  c.settle('other', other as Shared<string>, 'o');
  t.same(await Promise.all([b, b2]), ['v', 'v'], 'every caller that joined gets the value');
  t.equal(joins, 2);
  t.equal(c.joined, 2);
  t.equal(c.size, 0, 'nothing in flight after settling');
  t.ok(c.claim('k') instanceof Shared, 'a later call claims anew');
  // A claim ended with a failure: the joiners share it (the outcome is an error value, never a rejection).
  const failing = c.claim('f') as Shared<string>;
  const joined = c.claim('f');
  c.settle('f', failing, 'error');
  t.equal(await joined, 'error', 'a joiner shares the failure');
  t.equal(c.size, 1, 'a failure is not kept (only the later claim of k is in flight)');
  // After a reorg no call joins a claim made before it, and settling that claim leaves the new table alone.
  const before = c.claim('r') as Shared<string>;
  c.forget();
  const after = c.claim('r');
  t.ok(after instanceof Shared, 'a call after the reorg claims anew');
  c.settle('r', before, 'old');
  t.equal(c.size, 1, "the old claim's settling did not free the new one");
});
