// A split eth_getLogs's chunks (pipeline/logs.ts fetchChunks): at most 4 asked at a time, merged in
// block order whatever order they come back in; past routing.maxLogsResponseBytes the call gets
// RESPONSE_TOO_LARGE, no further chunk is asked and the budget of those in flight is closed (their
// exchanges are cut off at their next bytes); the first error ends the call likewise.

import t from 'tap';
import type { Outcome } from '../../src/jsonrpc/response.js';
import { CHUNKS_AT_ONCE, fetchChunks } from '../../src/pipeline/logs.js';
import type { BytePool } from '../../src/upstream/answer-bytes.js';

/** Chunk k answers `answer(k)` after a delay that makes later chunks come back first. */
function runner(answer: (k: number) => Outcome): {
  run: (params: unknown[], budget: BytePool) => Promise<Outcome>;
  asked: number[];
  maxAtOnce: () => number;
  budgets: BytePool[];
} {
  const asked: number[] = [];
  const budgets: BytePool[] = [];
  let now = 0;
  let most = 0;
  return {
    asked,
    budgets,
    maxAtOnce: () => most,
    run: async (params, budget) => {
      const k = params[0] as number;
      asked.push(k);
      budgets.push(budget);
      most = Math.max(most, ++now);
      await new Promise((r) => setTimeout(r, 20 - (k % 4) * 5));
      now--;
      return answer(k);
    },
  };
}

const chunks = Array.from({ length: 10 }, (_, k) => [k]);

t.test('merged in order, at most 4 at a time', async (t) => {
  const r = runner((k) => ({ result: k % 3 === 0 ? '[]' : `[${k}]` }));
  const out = await fetchChunks(chunks, 1024, r.run);
  t.same(out, { result: '[1,2,4,5,7,8]' });
  t.equal(r.maxAtOnce(), CHUNKS_AT_ONCE);
  t.equal(r.asked.length, 10);
});

t.test('past the budget: RESPONSE_TOO_LARGE, no further chunk asked, the budget closed', async (t) => {
  const r = runner(() => ({ result: `[${'1'.repeat(100)}]` }));
  const out = await fetchChunks(chunks, 250, r.run);
  t.equal(out.error?.reason, 'RESPONSE_TOO_LARGE');
  t.ok(r.asked.length < 10, `${r.asked.length} of 10 chunks asked`);
  t.ok(r.budgets[0]!.closed, 'chunks in flight are cut off');
});

t.test('the first error ends the call', async (t) => {
  const r = runner((k) => (k === 1 ? { nodeError: '{"code":-32000,"message":"boom"}' } : { result: '[1]' }));
  const out = await fetchChunks(chunks, 1024, r.run);
  t.same(out, { nodeError: '{"code":-32000,"message":"boom"}' });
  t.ok(r.asked.length < 10, `${r.asked.length} of 10 chunks asked`);
});
