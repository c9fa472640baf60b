// Every control API route works over HTTP and shows up in GET /nodes; bad paths and arguments get
// a JSON error with 404/400.

import t from 'tap';
import { startDevnet, type DevnetNodeInfo } from '../../src/devnet/index.js';
import { CHAIN_ID, assertIdentical, headOf } from './fixtures/chain.js';

async function call(base: string, method: 'GET' | 'POST', path: string): Promise<{ status: number; body: any }> {
  const res = await fetch(base + path, { method });
  if (!/^application\/json/.test(res.headers.get('content-type') ?? '')) throw new Error(`${method} ${path}: not JSON`);
  return { status: res.status, body: await res.json() };
}

t.test('control API', async (t) => {
  const devnet = await startDevnet({ nodes: 3, chainId: CHAIN_ID, blockTimeMs: 0, basePort: 0, controlPort: 0 });
  t.teardown(() => devnet.stop());
  const base = devnet.controlUrl!;
  t.match(base, /^http:\/\/127\.0\.0\.1:\d+$/);
  const nodes = async (): Promise<DevnetNodeInfo[]> => (await call(base, 'GET', '/nodes')).body;

  const list = await nodes();
  t.equal(list.length, 3);
  t.match(list[0], {
    index: 0,
    name: 'node-0',
    url: /^http:\/\/127\.0\.0\.1:\d+$/,
    wsUrl: /^ws:/,
    pid: Number,
    state: 'running',
    head: 0,
    lag: 0,
  });
  t.notMatch(JSON.stringify(list), /0xac0974|private|mnemonic/i, 'no secrets in the node list');

  t.same(await call(base, 'POST', '/mine?count=2'), { status: 200, body: { head: 2 } });
  t.same(await call(base, 'POST', '/mine'), { status: 200, body: { head: 3 } });

  let r = await call(base, 'POST', '/nodes/1/lag?blocks=2');
  t.equal(r.status, 200);
  t.match(r.body, { index: 1, state: 'lagging' });
  await call(base, 'POST', '/mine?count=3');
  t.match((await nodes())[1], { state: 'lagging', head: 4, lag: 2 });

  r = await call(base, 'POST', '/nodes/1/resume');
  t.match(r.body, { state: 'running', head: 6, lag: 0 });

  await call(base, 'POST', '/nodes/2/stall');
  await call(base, 'POST', '/mine');
  t.match((await nodes())[2], { state: 'stalled', head: 6, lag: 1 });
  await call(base, 'POST', '/nodes/2/resume');
  t.match((await nodes())[2], { state: 'running', head: 7 });

  r = await call(base, 'POST', '/nodes/0/kill');
  t.match(r.body, { state: 'killed', pid: null });
  t.equal((await call(base, 'POST', '/mine')).body.head, 8, 'mining goes on without node 0');
  t.equal((await call(base, 'POST', '/nodes/0/lag?blocks=1')).status, 409, 'a killed node cannot be lagged');
  r = await call(base, 'POST', '/nodes/0/restart');
  t.match(r.body, { state: 'running', head: 8, pid: Number });
  t.equal(await headOf(r.body.url), 8);
  await assertIdentical(t, devnet, 'after the API restart');

  for (const [method, path, status] of [
    ['GET', '/nope', 404],
    ['POST', '/nodes/9/kill', 404],
    ['POST', '/nodes/x/kill', 404],
    ['POST', '/nodes/1/explode', 404],
    ['POST', '/nodes/1/lag', 400],
    ['POST', '/nodes/1/lag?blocks=abc', 400],
    ['POST', '/nodes/1/lag?blocks=-1', 400],
    ['POST', '/mine?count=0', 400],
    ['POST', '/mine?count=1.5', 400],
    ['GET', '/mine', 405],
    ['POST', '/nodes', 405],
  ] as const) {
    const res = await call(base, method, path);
    t.equal(res.status, status, `${method} ${path} -> ${status}`);
    t.type(res.body.error, 'string', `${method} ${path} explains itself`);
  }
});
