/**
 * Rate limits apply per call over WebSocket as over HTTP: in a batch frame over the budget, the
 * calls past it get -32005 with retryAfterSeconds in their own places, the rest are answered, and
 * the socket stays open.
 */
import t from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { openSocket } from '../helpers/ws.js';

t.test('a batch frame over the per-IP budget: -32005 per call past it, socket open', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'a', url: anvil.url }],
    rateLimit: { perIp: { ratePerSec: 5, burst: 5 } },
  });
  const ws = await openSocket(t, sy.url.replace('http', 'ws'));
  const batch = Array.from({ length: 40 }, (_, i) => `{"jsonrpc":"2.0","id":${i},"method":"eth_chainId"}`);
  const answers = (await ws.ask(`[${batch.join(',')}]`)) as {
    id: number;
    result?: string;
    error?: { code: number; data?: { retryAfterSeconds?: number } };
  }[];
  t.equal(answers.length, 40, 'one answer per call');
  t.same(
    answers.map((a) => a.id),
    batch.map((_, i) => i),
    'in request order',
  );
  const ok = answers.filter((a) => a.result === '0xba').length;
  const limited = answers.filter((a) => a.error?.code === -32005 && (a.error.data?.retryAfterSeconds ?? 0) >= 1).length;
  t.ok(ok >= 1 && ok <= 10, `the budget admitted some calls (${ok})`);
  t.equal(ok + limited, 40, `every other call got -32005 with retryAfterSeconds (${limited})`);
  const after = await ws.ask('{"jsonrpc":"2.0","id":"x","method":"net_version"}');
  t.equal(after.id, 'x', 'the socket stays open and answers');
});
