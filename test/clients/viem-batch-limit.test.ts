/**
 * What docs/limits.md ("Client libraries") says about viem and Switchyard's batch cap, pinned against the real library:
 * with `batch: true` viem's default batch size (1,000) is over server.maxBatchSize (100), so a
 * large batch gets HTTP 413; viem retries each call (they batch again as timing has it, never
 * split on purpose), so calls fail or succeed by chance; with `batchSize: 100` they all succeed.
 */
import t from 'tap';
import { createPublicClient, http } from 'viem';
import { startAnvil } from '../helpers/anvil.js';
import { get } from '../helpers/rpc.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { startSwitchyard } from '../helpers/switchyard.js';

const addresses = Array.from({ length: 150 }, (_, i) => `0x${(i + 1).toString(16).padStart(40, '0')}` as const);

t.test('viem batch: true (1,000 per batch) against maxBatchSize 100: 413, retried, re-batched by timing', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const sy = await startSwitchyard(t, { upstreams: [{ name: 'node-a', url: anvil.url }] });
  const sizes: number[] = [];
  const client = createPublicClient({
    transport: http(sy.url, {
      batch: true,
      retryCount: 2,
      retryDelay: 1,
      onFetchRequest: async (req) => {
        const body = (await req.clone().json()) as unknown;
        sizes.push(Array.isArray(body) ? body.length : 1);
      },
    }),
  });
  const results = await Promise.allSettled(addresses.map((address) => client.getBalance({ address })));
  t.equal(sizes[0], 150, 'viem sent the 150 calls as one batch');
  const m = (await get(`${sy.adminUrl}/metrics`)).text;
  const refused = sizes.filter((n) => n > 100).length;
  t.same(
    metricSamples(m, 'switchyard_http_requests_total', { status: '413' }),
    [refused],
    'every batch over 100 got 413',
  );
  // viem retries each call of a 413'd batch on its own backoff; the retries batch again with
  // whatever is pending then, usually all of them, so they may be refused again or land in a
  // smaller batch by chance. Never split on purpose:
  t.ok(sizes.slice(1).reduce((x, y) => x + y, 0) >= 150, `every call was retried (batches sent: ${sizes.join(', ')})`);
  // How many calls fail is timing's: one assertion covers them all, whatever their number.
  const failed = results.flatMap((r) =>
    r.status === 'rejected' ? [String((r.reason as { details?: string }).details)] : [],
  );
  t.same(
    failed.filter((d) => !/batch too large: \d+ calls, at most 100 allowed/.test(d)),
    [],
    `every failed call carries the cap (${failed.length} failed)`,
  );
  t.ok(
    results.filter((r) => r.status === 'rejected').length > 0 || sizes.length > 1,
    'the oversized batch did not simply succeed',
  );
  t.comment(
    `viem: ${results.filter((r) => r.status === 'fulfilled').length} of 150 calls answered after retries in batches of ${sizes.join(', ')}`,
  );

  const fitted = createPublicClient({ transport: http(sy.url, { batch: { batchSize: 100 } }) });
  const ok = await Promise.all(addresses.map((address) => fitted.getBalance({ address })));
  t.equal(ok.length, 150, 'batchSize: 100 fits: every call answered');
});
