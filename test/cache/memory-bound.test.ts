/**
 * The memory cache stays within cache.maxBytes however much cacheable data goes through it:
 * thousands of distinct finalized answers (balances and proofs of random addresses at finalized
 * blocks) many times the bound; `switchyard_cache_bytes` and /status cache.bytes stay at or under
 * it at every check, evictions are counted, and the cache keeps working (recent entries hit).
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import {
  cacheHits,
  hex,
  metricValue,
  rawCall,
  scrape,
  startProxiedStack,
  status,
  waitSynced,
} from './fixtures/tools.js';
import { post } from '../helpers/rpc.js';

const MAX_BYTES = 200_000;

t.test('filling far beyond cache.maxBytes keeps the cache at or under it', async (t) => {
  const { devnet, sy, node } = await startProxiedStack(t, { nodes: 1, config: { cache: { maxBytes: MAX_BYTES } } });
  await devnet.mine(30);
  const { finalized } = await waitSynced(sy, node);
  const addresses = Array.from({ length: 2_000 }, () => `0x${randomBytes(20).toString('hex')}`);

  let highest = 0;
  let statusHighest = 0;
  let answered = 0;
  let answerBytes = 0;
  /** One batch of calls; then the bound is checked in the metrics and in /status. */
  const batch = async (calls: [string, unknown[]][]) => {
    const body = calls.map(([method, params], i) => ({ jsonrpc: '2.0', id: i, method, params }));
    const r = await post(sy.url, body);
    const out = r.json() as { result?: unknown }[];
    answered += out.filter((o) => o.result !== undefined && o.result !== null).length;
    answerBytes += r.text.length;
    highest = Math.max(highest, metricValue(await scrape(sy), 'switchyard_cache_bytes'));
    statusHighest = Math.max(statusHighest, (await status(sy)).cache.bytes);
  };

  for (let i = 0; i < addresses.length; i += 100) {
    await batch(addresses.slice(i, i + 100).map((a, j) => ['eth_getBalance', [a, hex((i + j) % (finalized + 1))]]));
  }
  for (let i = 0; i < 600; i += 50) {
    await batch(addresses.slice(i, i + 50).map((a, j) => ['eth_getProof', [a, [], hex((i + j) % (finalized + 1))]]));
  }
  for (let n = 0; n <= finalized; n += 10) {
    await batch(
      Array.from(
        { length: Math.min(10, finalized + 1 - n) },
        (_, j) => ['eth_getBlockByNumber', [hex(n + j), true]] as [string, unknown[]],
      ),
    );
  }
  t.equal(answered, 2_000 + 600 + finalized + 1, 'every call answered');
  t.ok(
    answerBytes > 3 * MAX_BYTES,
    `answers far beyond the bound went through (${answerBytes} bytes of responses, bound ${MAX_BYTES})`,
  );

  const text = await scrape(sy);
  const bytes = metricValue(text, 'switchyard_cache_bytes');
  const evictions = metricValue(text, 'switchyard_cache_evictions_total');
  t.ok(highest <= MAX_BYTES, `switchyard_cache_bytes never above ${MAX_BYTES} (highest seen ${highest})`);
  t.ok(statusHighest <= MAX_BYTES, `/status cache.bytes never above ${MAX_BYTES} (highest seen ${statusHighest})`);
  t.ok(bytes > MAX_BYTES / 2, `the cache was filled, not bypassed (${bytes} bytes now)`);
  t.ok(evictions > 0, `evictions counted (${evictions})`);
  t.ok(metricValue(text, 'switchyard_cache_entries') > 0, 'entries held');
  const s = (await status(sy)).cache;
  t.ok(
    s.bytes <= MAX_BYTES && s.maxBytes === MAX_BYTES,
    `/status cache: ${s.bytes} of ${s.maxBytes} bytes, ${s.entries} entries, ${s.evictions} evictions`,
  );

  const before = await cacheHits(sy);
  const last = await rawCall(sy.url, 'eth_getBlockByNumber', [hex(finalized), true]);
  t.equal(last.json.result?.number, hex(finalized), 'a recent entry answers');
  t.equal((await cacheHits(sy)) - before, 1, 'from the cache: it still works at the bound');
  t.comment(
    `bound ${MAX_BYTES}; highest ${highest}; now ${bytes} bytes in ${s.entries} entries; ${evictions} evictions; ${answerBytes} response bytes`,
  );
});
