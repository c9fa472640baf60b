/**
 * /status carries the limiter figures (SPEC 8): the rate limits in force (API keys by name, never
 * the key), calls refused for rate, and the concurrency bounds with calls in flight and shed.
 * The refusal is deterministic: a method that costs more than the whole budget.
 */
import t from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { call, get } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';

const KEY = 'status-test-key-0123456789';

t.test('/status shows rate-limit and concurrency figures', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'a', url: anvil.url }],
    server: { maxInFlight: 500, maxInFlightPerIp: 50 },
    rateLimit: {
      perIp: { ratePerSec: 10, burst: 10 },
      methodCost: { eth_getLogs: 100 },
      apiKeys: [{ name: 'partner', key: KEY, ratePerSec: 5, burst: 5 }],
    },
  });
  const refused = await call(sy.url, 'eth_getLogs', [{ fromBlock: '0x0', toBlock: '0x0' }]);
  t.equal(refused.error?.code, -32005, 'a call costing more than the whole budget is refused');
  const status = (await get(`${sy.adminUrl}/status`)).json();
  t.match(status.limits, {
    rate: {
      perIp: { ratePerSec: 10, burst: 10 },
      apiKeys: [{ name: 'partner', ratePerSec: 5, burst: 5 }],
      shared: null,
      refused: 1,
    },
    concurrency: { inFlight: 0, maxInFlight: 500, maxPerIp: 50, clients: 0, shed: { overloaded: 0, ip: 0 } },
  });
  t.notOk(JSON.stringify(status).includes(KEY), 'no API key in /status');
});
