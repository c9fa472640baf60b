/**
 * The shared uptime image is input (SPEC 12 Replicas, uptime/share/store-image.ts): two replicas on a
 * real redis-server in front of one real anvil, and a writer of the test's own that replaces the
 * image with garbage, then with a value over the size limit, then with another SQLite database,
 * each with a higher version. Asserted: both pages keep answering with their incident, every
 * poisoned image is refused and counted (never loaded), and the prober publishes a good image
 * again, which the other loads.
 */
import { DatabaseSync } from 'node:sqlite';
import { Redis } from 'ioredis';
import t from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { startRedis } from '../helpers/redis.js';
import { get, post } from '../helpers/rpc.js';
import { startSwitchyard, type RunningSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { MAX_IMAGE_BYTES } from '../../src/uptime/share/store-image.js';
import { imageOf } from '../../src/uptime/store/sqlite.js';

const KEY = 'switchyard:186:uptime:';

const refused = async (sy: RunningSwitchyard): Promise<number> =>
  metricSamples((await get(`${sy.adminUrl}/metrics`)).text, 'switchyard_uptime_shared_images_total', {
    op: 'load',
    outcome: 'refused',
  }).reduce((a, b) => a + b, 0);

async function page(sy: RunningSwitchyard): Promise<any> {
  const r = await get(`${sy.url}/uptime.json`);
  return r.status === 200 ? r.json() : null;
}

t.test('poisoned uptime images in Redis are refused; the pages go on and heal', async (t) => {
  const redis = await startRedis(t);
  const writer = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  t.teardown(() => writer.disconnect());
  const node = await startAnvil({ args: ['--block-time', '1'] });
  t.teardown(() => node.stop());
  const config = { upstreams: [{ name: 'anvil', url: node.url }], redis: redis.url, uptime: { probeIntervalMs: 300 } };
  const a = await startSwitchyard(t, config);
  const b = await startSwitchyard(t, config);
  const opened = await post(`${a.adminUrl}/uptime/incidents`, { title: 'Kept', status: 'monitoring', message: 'x' });
  t.equal(opened.status, 201);
  const both = async (check: (p: any) => boolean): Promise<boolean> => {
    const [pa, pb] = [await page(a), await page(b)];
    return pa !== null && pb !== null && check(pa) && check(pb);
  };
  await waitFor('the incident on both pages', () => both((p) => p.incidents.length === 1));

  const other = new DatabaseSync(':memory:');
  other.exec('CREATE TABLE users (name TEXT)');
  const poisons: [string, Buffer][] = [
    ['garbage', Buffer.from('x'.repeat(4_096))],
    ['over the limit', Buffer.alloc(MAX_IMAGE_BYTES + 1, 1)],
    ['another database', imageOf(other)],
  ];
  other.close();
  for (const [name, value] of poisons) {
    const before = (await refused(a)) + (await refused(b));
    const version = Number(await writer.get(`${KEY}version`));
    await writer
      .multi()
      .set(`${KEY}image`, value)
      .set(`${KEY}version`, version + 1000)
      .exec();
    await waitFor(`${name}: refused`, async () => (await refused(a)) + (await refused(b)) > before);
    t.pass(`${name}: refused and counted`);
    await waitFor(`${name}: a good image published again`, async () => {
      const image = await writer.getBuffer(`${KEY}image`);
      return (
        image !== null && image.length <= MAX_IMAGE_BYTES && image.subarray(0, 15).toString() === 'SQLite format 3'
      );
    });
    t.ok(
      await both((p) => p.incidents.length === 1 && p.incidents[0].summary !== undefined),
      `${name}: both pages go on`,
    );
  }
  // A new incident made at B after the poisoning reaches A: the replicas share again.
  t.equal(
    (await post(`${b.adminUrl}/uptime/incidents`, { title: 'After', status: 'investigating', message: 'y' })).status,
    201,
  );
  await waitFor('shared again', () => both((p) => p.incidents.length === 2));
  t.pass('the replicas share again');
});
