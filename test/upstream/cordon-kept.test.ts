/**
 * Cordons without Redis (SPEC 4.8): kept in a file of their own beside the uptime store, so a
 * cordon survives a restart of the replica; a reload keeps it; a reload that removes the node lists
 * its cordon as ignored, and one that adds the node back finds it cordoned again. The uptime page's
 * JSON shows the node as cordoned with its reason. A store file of a version that kept cordons in
 * the store itself (fixtures/store-v4.db) starts with its cordon in force, carried into the file.
 */
import { copyFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { startDevnet } from '../../src/devnet/index.js';
import { validateConfig } from '../../src/config/load.js';
import { get, post } from '../helpers/rpc.js';
import { startSwitchyard, testConfig, type RunningSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

t.test('a cordon is kept in the uptime store across a restart and reloads', async (t) => {
  const devnet = await startDevnet({ nodes: 2, chainId: 186, blockTimeMs: 0, basePort: 0 });
  t.teardown(() => devnet.stop());
  const upstreams = devnet.nodes().map((n) => ({ name: n.name, url: n.url }));
  const [first, second] = upstreams.map((u) => u.name) as [string, string];
  const dir = t.testdir();
  const store = join(dir, 'uptime.db');
  const uptime = { store, showUpstreams: true, probeIntervalMs: 200 };
  const start = (): Promise<RunningSwitchyard> => startSwitchyard(t, { upstreams, uptime });
  const listed = async (sy: RunningSwitchyard): Promise<any> => (await get(`${sy.adminUrl}/upstreams`)).json();

  let sy = await start();
  t.equal((await listed(sy)).keptIn, 'file', 'kept in a file');
  t.equal((await post(`${sy.adminUrl}/upstreams/${second}/cordon`, { reason: 'disk full' })).status, 200, 'cordoned');
  const page = await waitFor('the uptime JSON lists the nodes', async () => {
    const r = await get(`${sy.url}/uptime.json`);
    return r.status === 200 ? r.json() : undefined;
  });
  t.match(
    page.upstreams.find((u: { name: string }) => u.name === second),
    { state: 'cordoned', cordon: { reason: 'disk full', since: String } },
    'the uptime page shows it cordoned, with its reason and time',
  );
  await sy.close();
  t.ok(existsSync(join(dir, 'uptime.cordons.json')), 'the file is beside the store');

  sy = await start();
  t.match(
    (await listed(sy)).upstreams[1],
    { name: second, state: 'cordoned', cordon: { reason: 'disk full' } },
    'after a restart: still cordoned',
  );

  // A reload without the node: its cordon is kept but ignored; with it again: cordoned again.
  await sy.app.reload(validateConfig(testConfig({ upstreams: [upstreams[0]!], uptime })));
  t.match(
    await listed(sy),
    { upstreams: [{ name: first, state: 'healthy' }], ignoredCordons: [{ name: second, reason: 'disk full' }] },
    'removed by a reload: listed as ignored',
  );
  t.equal(
    (await post(`${sy.adminUrl}/upstreams/${second}/cordon`, '')).status,
    404,
    'a removed name cannot be cordoned',
  );
  await sy.app.reload(validateConfig(testConfig({ upstreams, uptime })));
  t.match((await listed(sy)).upstreams[1], { name: second, state: 'cordoned' }, 'added back: cordoned again');
  t.equal((await post(`${sy.adminUrl}/upstreams/${second}/uncordon`, '')).status, 200, 'uncordoned');
  await sy.close();

  sy = await start();
  t.equal((await listed(sy)).upstreams[1].cordon, null, 'the uncordon was kept too');
});

t.test('a store of the version that kept cordons in it: its cordon is in force, carried into the file', async (t) => {
  const devnet = await startDevnet({ nodes: 2, chainId: 186, blockTimeMs: 0, basePort: 0 });
  t.teardown(() => devnet.stop());
  // The fixture's cordon is of node-b.
  const upstreams = devnet.nodes().map((n, i) => ({ name: `node-${'ab'[i]}`, url: n.url }));
  const dir = t.testdir();
  const store = join(dir, 'uptime.db');
  copyFileSync(fileURLToPath(new URL('../uptime/fixtures/store-v4.db', import.meta.url)), store);
  const uptime = { store, showUpstreams: true, probeIntervalMs: 200 };
  for (const when of ['first start', 'restarted']) {
    const sy = await startSwitchyard(t, { upstreams, uptime });
    t.match(
      (await get(`${sy.adminUrl}/upstreams`)).json(),
      {
        keptIn: 'file',
        upstreams: [
          { name: 'node-a', cordon: null },
          { name: 'node-b', state: 'cordoned', cordon: { reason: 'disk replacement' } },
        ],
      },
      `${when}: node-b is cordoned with the reason the store held`,
    );
    await sy.close();
  }
  t.ok(existsSync(join(dir, 'uptime.cordons.json')), 'carried into the file');
});
