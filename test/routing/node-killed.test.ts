/**
 * A node killed mid-test: calls keep being answered by the others. Ten clients send batches
 * continuously while node-0 and then node-1 are SIGKILLed; every call gets exactly one answer,
 * with its own id, in its place, and none is an error.
 */
import t from 'tap';
import { startStack } from '../helpers/stack.js';
import { DEV_ADDRESS } from '../helpers/anvil.js';
import { post } from '../helpers/rpc.js';
import { waitFor } from '../helpers/wait.js';

t.test('killing nodes under load loses no call', async (t) => {
  const { sy, devnet } = await startStack(t, { blockTimeMs: 250, config: { routing: { headPollMs: 100 } } });
  let nextId = 1;
  let answered = 0;
  const problems: string[] = [];
  let stop = false;

  const client = async (): Promise<void> => {
    while (!stop) {
      const ids = [nextId++, nextId++, nextId++];
      const batch = [
        { jsonrpc: '2.0', id: ids[0], method: 'eth_getBalance', params: [DEV_ADDRESS, 'latest'] },
        { jsonrpc: '2.0', id: ids[1], method: 'eth_getBlockByNumber', params: ['latest', false] },
        { jsonrpc: '2.0', id: ids[2], method: 'eth_blockNumber', params: [] },
      ];
      const res = await post(sy.url, batch);
      const body = res.json() as { id: number; result?: unknown; error?: { message: string } }[];
      if (res.status !== 200 || !Array.isArray(body) || body.length !== 3) {
        problems.push(`status ${res.status}: ${res.text.slice(0, 200)}`);
        continue;
      }
      body.forEach((r, i) => {
        if (r.id !== ids[i]) problems.push(`slot ${i}: id ${r.id}, expected ${ids[i]}`);
        else if (r.error || r.result === null || r.result === undefined)
          problems.push(`id ${r.id}: ${JSON.stringify(r.error ?? r.result)}`);
      });
      answered += 3;
    }
  };
  const clients = Array.from({ length: 10 }, () => client());

  await waitFor('warm-up traffic', () => answered >= 300, { timeoutMs: 60_000 });
  await devnet.kill(0);
  const afterFirst = answered;
  await waitFor('traffic after the first kill', () => answered >= afterFirst + 600, { timeoutMs: 60_000 });
  await devnet.kill(1);
  const afterSecond = answered;
  await waitFor('traffic after the second kill', () => answered >= afterSecond + 600, { timeoutMs: 60_000 });
  stop = true;
  await Promise.all(clients);

  t.same(problems.slice(0, 10), [], 'every call answered with its own id and a result');
  t.equal(problems.length, 0, `${answered} calls, ${problems.length} problems`);
  const status = (await (await fetch(`${sy.adminUrl}/status`)).json()) as {
    upstreams: { name: string; state: string }[];
  };
  t.same(
    status.upstreams.map((u) => u.state),
    ['down', 'down', 'healthy'],
    'the killed nodes are seen as down',
  );
});
