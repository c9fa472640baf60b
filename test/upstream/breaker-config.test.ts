// routing.breaker: the failure threshold and cooldown come from the config, at start and on reload.

import t from 'tap';
import { validateConfig } from '../../src/config/load.js';
import { startFakeNode } from '../helpers/fake-node.js';
import { get, post } from '../helpers/rpc.js';
import { startSwitchyard, testConfig } from '../helpers/switchyard.js';

t.test('the breaker opens after routing.breaker.failureThreshold failures and stays open for cooldownMs', async (t) => {
  const fake = await startFakeNode(t, (method) =>
    method === 'eth_getBalance' ? { status: 500, body: 'down' } : undefined,
  );
  const input = {
    upstreams: [{ name: 'fake', url: fake.url }],
    routing: { maxAttempts: 1, breaker: { failureThreshold: 2, cooldownMs: 600_000 } },
  };
  const sy = await startSwitchyard(t, input);
  const breaker = async (): Promise<string> =>
    ((await get(`${sy.adminUrl}/status`)).json() as { upstreams: { breaker: string }[] }).upstreams[0]!.breaker;
  const balance = {
    jsonrpc: '2.0',
    id: 1,
    method: 'eth_getBalance',
    params: ['0x0000000000000000000000000000000000000001', 'latest'],
  };
  await post(sy.url, balance);
  t.equal(await breaker(), 'closed', 'one failure: still closed');
  await post(sy.url, balance);
  t.equal(await breaker(), 'open', 'two failures: open (the default threshold is 5)');
  const reached = fake.calls.filter((c) => c.method === 'eth_getBalance').length;
  t.equal((await post(sy.url, balance)).json().error?.code, -32002, 'no upstream while open');
  t.equal(fake.calls.filter((c) => c.method === 'eth_getBalance').length, reached, 'the open breaker keeps calls away');

  // A reload with a short cooldown applies to the breaker already open.
  await sy.app.reload(
    validateConfig(
      testConfig({ ...input, routing: { maxAttempts: 1, breaker: { failureThreshold: 2, cooldownMs: 1 } } }),
    ),
  );
  t.equal(await breaker(), 'half-open', 'after reload the 1 ms cooldown has passed: half-open');
});
