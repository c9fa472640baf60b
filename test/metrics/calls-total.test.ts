// Every call counts once in switchyard_calls_total, refused ones included, and every label value
// it carries comes from the registry's closed sets (CALL_OUTCOMES, CALL_REASONS). Also pins
// build_info, the breaker `state` label and block heights named with their unit.

import t from 'tap';
import { CALL_OUTCOMES, CALL_REASONS } from '../../src/metrics/registry.js';
import { BREAKER_STATES } from '../../src/metrics/labels.js';
import { startAnvil } from '../helpers/anvil.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { get, post } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';

async function metricsText(adminUrl: string): Promise<string> {
  return (await get(`${adminUrl}/metrics`)).text;
}

const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);

t.test('calls_total counts every call once, refused ones included, for a mixed batch', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  // A budget of 1 unit a second plus an allowance of 6 an hour, which the first calls of the batch
  // spend; eth_getLogs costs 6, so it fits only that allowance and is refused for the rest of the
  // hour: a batch of 20 valid calls is partly admitted and partly rate limited.
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'node-a', url: anvil.url }],
    rateLimit: { perIp: { ratePerSec: 1, burst: 7, burstWindowSec: 3600 }, methodCost: { eth_getLogs: 6 } },
  });
  const before = sum(metricSamples(await metricsText(sy.adminUrl), 'switchyard_calls_total'));

  const batch: unknown[] = [
    { jsonrpc: '2.0', id: 1, method: 'eth_chainId' },
    { jsonrpc: '2.0', id: 2, method: 'eth_blockNumber' },
    { jsonrpc: '2.0', id: 3, method: 'foo_bar' }, // unknown: -32601, client_error
    42, // invalid element
    { jsonrpc: '1.0', id: 4, method: 'eth_chainId' }, // invalid element
    { jsonrpc: '2.0', method: 'eth_chainId' }, // notification: worked on, no answer
    {
      jsonrpc: '2.0',
      id: 5,
      method: 'eth_call',
      params: [{ to: '0x0000000000000000000000000000000000000000', data: '0x' }, 'latest'],
    },
    { jsonrpc: '2.0', id: 6, method: 'eth_getLogs', params: [{ fromBlock: '0x0', toBlock: '0x0' }] },
    ...Array.from({ length: 12 }, (_, i) => ({
      jsonrpc: '2.0',
      id: 100 + i,
      method: 'eth_getBalance',
      params: ['0x0000000000000000000000000000000000000001', 'latest'],
    })),
  ];
  const res = await post(sy.url, batch);
  t.equal(res.status, 200);
  const answers = res.json() as { error?: { code: number } }[];
  t.equal(answers.length, batch.length - 1, 'one answer per non-notification element');
  t.ok(
    answers.some((a) => a.error?.code === -32005),
    'some calls of the batch were rate limited',
  );
  t.ok(
    answers.some((a) => a.error === undefined),
    'some calls of the batch were answered',
  );
  // Requests refused whole count once each: bad JSON, and one over the rate limit entirely.
  t.equal((await post(sy.url, '{"jsonrpc":')).json().error.code, -32700);
  const limited = await post(sy.url, { jsonrpc: '2.0', id: 7, method: 'eth_getLogs', params: [{}] });
  t.equal(limited.status, 429);
  const sent = batch.length + 2;

  const text = await metricsText(sy.adminUrl);
  t.equal(
    sum(metricSamples(text, 'switchyard_calls_total')) - before,
    sent,
    `calls_total grew by exactly the ${sent} calls sent`,
  );
  t.equal(
    sum(metricSamples(text, 'switchyard_calls_total', { reason: 'RATE_LIMITED', outcome: 'client_error' })),
    answers.filter((a) => a.error?.code === -32005).length + 1,
    'rate-limited calls are client errors with reason RATE_LIMITED',
  );
  t.equal(
    sum(metricSamples(text, 'switchyard_calls_total', { method: 'invalid', reason: 'INVALID_REQUEST' })),
    2,
    'the two invalid elements',
  );
  t.equal(
    sum(metricSamples(text, 'switchyard_calls_total', { method: 'invalid', reason: 'PARSE_ERROR' })),
    1,
    'the unparsable body',
  );
  t.equal(
    sum(metricSamples(text, 'switchyard_calls_total', { reason: 'METHOD_NOT_FOUND', outcome: 'client_error' })),
    1,
    'the unknown method',
  );
  t.equal(
    sum(metricSamples(text, 'switchyard_calls_total', { outcome: 'service_error' })),
    0,
    'no service-caused error',
  );

  // Closed label sets: every series carries values the registry declares.
  for (const line of text.split('\n').filter((l) => l.startsWith('switchyard_calls_total{'))) {
    const outcome = /outcome="([^"]*)"/.exec(line)?.[1];
    const reason = /reason="([^"]*)"/.exec(line)?.[1];
    t.ok((CALL_OUTCOMES as readonly string[]).includes(outcome ?? ''), `outcome ${outcome} is declared`);
    t.ok((CALL_REASONS as readonly string[]).includes(reason ?? ''), `reason ${reason} is declared`);
  }
});

t.test('build info, breaker state label, heights in block numbers, upstream latency by method', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const sy = await startSwitchyard(t, { upstreams: [{ name: 'node-a', url: anvil.url }], chainId: 186 });
  await post(sy.url, {
    jsonrpc: '2.0',
    id: 1,
    method: 'eth_getBalance',
    params: ['0x0000000000000000000000000000000000000001', 'latest'],
  });
  const text = await metricsText(sy.adminUrl);
  t.match(
    text,
    /^switchyard_build_info\{version="[^"]+",chain_id="0xba"\} 1$/m,
    'build_info with version and chain id',
  );
  for (const state of BREAKER_STATES) {
    t.same(
      metricSamples(text, 'switchyard_upstream_breaker_state', { upstream: 'node-a', state }),
      [state === 'closed' ? 1 : 0],
      `breaker ${state}`,
    );
  }
  t.same(metricSamples(text, 'switchyard_upstream_head_block_number', { upstream: 'node-a' }), [0]);
  t.same(metricSamples(text, 'switchyard_fleet_head_block_number'), [0]);
  t.same(metricSamples(text, 'switchyard_upstream_quarantined', { upstream: 'node-a' }), [0]);
  t.ok(
    sum(
      metricSamples(text, 'switchyard_upstream_duration_seconds_count', {
        upstream: 'node-a',
        method: 'eth_getBalance',
      }),
    ) >= 1,
    'upstream latency by method',
  );
  t.same(metricSamples(text, 'switchyard_config_last_reload_successful'), [1]);
});
