/**
 * The programmatic API (src/api.ts), through the package's own name and `exports` (a package can
 * import itself by name): start from a configuration object in front of a real anvil node, reload
 * with another object, stop; a bad object throws ConfigError with its problems.
 */
import t from 'tap';
import { ConfigError, start } from 'switchyard-rpc';
import { startAnvil } from '../helpers/anvil.js';
import { call } from '../helpers/rpc.js';
import { waitFor } from '../helpers/wait.js';

t.test('start, reload and stop from config objects', async (t) => {
  const anvil = await startAnvil({ chainId: 186 });
  t.teardown(() => anvil.stop());
  const base = {
    server: { host: '127.0.0.1', port: 0, wsPort: null, shutdownDelayMs: 0 },
    admin: { host: '127.0.0.1', port: 0 },
    uptime: { store: null },
    log: { level: 'silent' },
  };
  const sy = await start({ ...base, upstreams: [{ name: 'a', url: anvil.url }] }, { processMetrics: false });
  t.teardown(() => sy.stop());
  const url = `http://127.0.0.1:${sy.ports.http}`;
  await waitFor('ready', () => sy.ready);
  t.match(await call(url, 'eth_chainId'), { result: '0xba' }, 'serves');

  await sy.reload({ ...base, upstreams: [{ name: 'b', url: anvil.url }] });
  const status = (await (await fetch(`http://127.0.0.1:${sy.ports.admin}/status`)).json()) as {
    upstreams: { name: string }[];
  };
  t.same(
    status.upstreams.map((u) => u.name),
    ['b'],
    'the reloaded object is the running config',
  );
  const bad = await sy.reload({ ...base, upstreams: [] }).then(
    () => null,
    (e: unknown) => e,
  );
  t.type(bad, ConfigError, 'a bad reload throws ConfigError, the running one stays');
  t.match(await call(url, 'eth_chainId'), { result: '0xba' }, 'still serves');

  await sy.stop();
  t.ok(
    await fetch(url).then(
      () => false,
      () => true,
    ),
    'stopped: nothing listens',
  );
});

t.test('a bad config object throws ConfigError with its problems', async (t) => {
  const err = await start({ upstreams: [{ name: 'a', url: 'ftp://x' }], sever: {} }).catch((e: unknown) => e);
  t.type(err, ConfigError);
  t.ok((err as ConfigError).problems.length >= 2, (err as ConfigError).problems.join('; '));
});
