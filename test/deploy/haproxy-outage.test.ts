/**
 * A full node outage behind the shipped balancer (SPEC 8, SPEC 9): config/haproxy.cfg, with only its
 * addresses changed to this machine's ports, in front of two Switchyard replicas over two anvil
 * nodes. Every node killed: HAProxy keeps both replicas in rotation (their /ready does not depend
 * on the nodes), so clients get Switchyard's NO_UPSTREAM (-32002) as JSON and the uptime page loads,
 * rather than the balancer's 503. Both replicas gone: the balancer itself answers a JSON-RPC error.
 * And with admin.readyRequiresUpstream, /ready does turn 503 when every node is down.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { validateConfig } from '../../src/config/load.js';
import { startAnvil } from '../helpers/anvil.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { freePort } from '../helpers/ports.js';
import { get, post } from '../helpers/rpc.js';
import { startSwitchyard, testConfig, type RunningSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

const HAPROXY = '/usr/sbin/haproxy';
const SHIPPED = new URL('../../config/haproxy.cfg', import.meta.url);
/**
 * How long calls go on through the outage: the shipped config takes a replica out after 2 failed
 * checks 1 s apart (`inter 1s fall 2`), so twice that is long enough to see it happen.
 */
const OUTAGE_WATCH_MS = 4_000;

/**
 * The shipped config, listening on `front` and sending to these replicas; a stats page to read
 * their state. Its connection cap is the shipped one (it follows the open-file limit).
 */
function shippedConfig(front: number, stats: number, replicas: RunningSwitchyard[]): string {
  let cfg = readFileSync(SHIPPED, 'utf8').replace(/^\s*bind :8540$/m, `  bind 127.0.0.1:${front}`);
  const servers = [...cfg.matchAll(/^\s*server (\S+) \S+:8545 check port 9545$/gm)];
  if (servers.length !== replicas.length) throw new Error(`expected ${replicas.length} servers in ${SHIPPED.pathname}`);
  servers.forEach((m, i) => {
    const r = replicas[i]!;
    const at = (url: string): string => new URL(url).port;
    cfg = cfg.replace(m[0], `  server ${m[1]} 127.0.0.1:${at(r.url)} check port ${at(r.adminUrl)}`);
  });
  return `${cfg}\nlisten stats\n  bind 127.0.0.1:${stats}\n  stats enable\n  stats uri /stats\n`;
}

t.test('every node down behind the shipped HAProxy: NO_UPSTREAM from Switchyard, the uptime page loads', async (t) => {
  const nodes = [await startAnvil(), await startAnvil()];
  t.teardown(() => Promise.all(nodes.map((n) => n.stop())));
  const upstreams = nodes.map((n, i) => ({ name: `node-${i}`, url: n.url }));
  const replicas: RunningSwitchyard[] = [];
  for (let i = 0; i < 2; i++)
    replicas.push(await startSwitchyard(t, { upstreams, uptime: { enabled: true, probeIntervalMs: 500 } }));

  const front = await freePort();
  const statsPort = await freePort();
  const cfg = join(t.testdir(), 'haproxy.cfg');
  writeFileSync(cfg, shippedConfig(front, statsPort, replicas));
  const haproxy = spawn(HAPROXY, ['-db', '-f', cfg], { stdio: ['ignore', 'ignore', 'pipe'] });
  let haproxyErr = '';
  haproxy.stderr!.on('data', (d: Buffer) => (haproxyErr += d.toString()));
  t.teardown(() => {
    if (haproxy.exitCode === null && haproxy.signalCode === null) haproxy.kill('SIGKILL');
  });
  /** Each replica's state as HAProxy sees it (UP, DOWN, ...), from its CSV stats. */
  const states = async (): Promise<string[]> => {
    const text = await (await request(`http://127.0.0.1:${statsPort}/stats;csv`)).body.text();
    const [head, ...lines] = text.trim().split('\n');
    const header = head!.replace(/^# /, '').split(',');
    const rows = lines.map((l) => l.split(','));
    return rows
      .filter((f) => f[header.indexOf('pxname')] === 'switchyard' && /^switchyard-/.test(f[header.indexOf('svname')]!))
      .map((f) => f[header.indexOf('status')]!);
  };
  await waitFor('HAProxy sees both replicas UP', async () => {
    if (haproxy.exitCode !== null) throw new Error(`haproxy exited: ${haproxyErr.slice(-300)}`);
    // What HAProxy said goes with a failure to reach its stats (a port it could not bind, say).
    const seen = await states().catch((err: Error) => {
      throw new Error(`${err.message}; haproxy said: ${haproxyErr.slice(-300) || 'nothing'}`);
    });
    return seen.length === 2 && seen.every((s) => s === 'UP');
  });
  const rpc = `http://127.0.0.1:${front}/`;
  const before = (await post(rpc, { jsonrpc: '2.0', id: 1, method: 'eth_chainId' })).json();
  t.equal(before.result, '0xba', 'a call through the balancer is answered while the nodes are up');

  await Promise.all(nodes.map((n) => n.stop()));
  for (const r of replicas)
    await waitFor(
      'the replica sees no upstream',
      async () => (await get(`${r.adminUrl}/ready?upstreams=1`)).status === 503,
    );
  for (const r of replicas)
    t.equal((await get(`${r.adminUrl}/ready`)).status, 200, '/ready stays 200 with every node down');

  // Calls go on for longer than the balancer needs to take a replica out; each must be Switchyard's own answer.
  const wrong: string[] = [];
  let calls = 0;
  const until = Date.now() + OUTAGE_WATCH_MS;
  while (Date.now() < until) {
    const r = await post(rpc, { jsonrpc: '2.0', id: 7, method: 'eth_blockNumber' });
    calls++;
    let code: unknown;
    try {
      code = r.json().error?.code;
    } catch {
      code = undefined;
    }
    if (r.status !== 200 || code !== -32002) wrong.push(`${r.status} ${r.text.slice(0, 160)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  t.same(wrong.slice(0, 5), [], `every call got -32002 JSON from Switchyard (${wrong.length} of ${calls} did not)`);
  t.same(await states(), ['UP', 'UP'], 'HAProxy kept both replicas in rotation');

  const page = await get(`http://127.0.0.1:${front}/uptime`);
  t.equal(page.status, 200, 'the uptime page loads through the balancer');
  t.match(page.headers['content-type'], /^text\/html/, 'as the HTML page');

  // No replica left at all: the balancer answers, and in JSON-RPC too.
  for (const r of replicas) await r.close();
  const alone = await waitFor('the balancer answers for itself', async () => {
    const r = await post(rpc, { jsonrpc: '2.0', id: 8, method: 'eth_blockNumber' });
    return r.status === 200 ? undefined : r;
  });
  t.equal(alone.status, 503, 'no replica: 503');
  t.match(alone.headers['content-type'], /^application\/json/, 'as JSON, not an HTML page');
  t.match(alone.json(), { jsonrpc: '2.0', id: null, error: { code: -32005 } }, 'a JSON-RPC error body');
});

t.test('admin.readyRequiresUpstream: /ready is 503 while every node is down', async (t) => {
  const node = await startAnvil();
  t.teardown(() => node.stop());
  const input = { upstreams: [{ name: 'node-0', url: node.url }], uptime: { enabled: false } };
  const sy = await startSwitchyard(t, { ...input, admin: { readyRequiresUpstream: true } });
  const readyGauge = async (): Promise<number[]> =>
    metricSamples((await get(`${sy.adminUrl}/metrics`)).text, 'switchyard_ready', {});
  t.equal((await get(`${sy.adminUrl}/ready`)).status, 200, 'ready with its node up');
  t.same(await readyGauge(), [1], 'switchyard_ready 1');
  await node.stop();
  await waitFor('/ready turns 503', async () => (await get(`${sy.adminUrl}/ready`)).status === 503);
  t.same(await readyGauge(), [0], 'switchyard_ready 0 while /ready is 503');
  const body = (await get(`${sy.adminUrl}/ready`)).json();
  t.same(body, { ready: false, upstreams: false }, 'the answer says why');
  await sy.app.reload(validateConfig(testConfig({ ...input, admin: { readyRequiresUpstream: false } })));
  t.equal((await get(`${sy.adminUrl}/ready`)).status, 200, 'a reload that turns it off applies at once');
  t.same(await readyGauge(), [1], 'switchyard_ready 1 again');
  t.equal((await get(`${sy.adminUrl}/ready?upstreams=1`)).status, 503, '?upstreams=1 still asks about the nodes');
});
