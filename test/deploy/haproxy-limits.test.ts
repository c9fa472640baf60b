/**
 * The shipped config/haproxy.cfg starts on a stock machine: `haproxy -c` passes as shipped, and it
 * serves under `ulimit -n 1024` (a fixed maxconn 20000 wanted ~40k file descriptors and HAProxy
 * refused to start: "Cannot raise FD limit"). Its connection cap follows the limit it gets.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { request } from 'undici';
import { freePort } from '../helpers/ports.js';
import { waitFor } from '../helpers/wait.js';

const HAPROXY = '/usr/sbin/haproxy';
const SHIPPED = fileURLToPath(new URL('../../config/haproxy.cfg', import.meta.url));

t.test('haproxy -c passes on the shipped file as it is', async (t) => {
  const r = spawnSync(HAPROXY, ['-c', '-f', SHIPPED], { encoding: 'utf8' });
  t.equal(r.status, 0, `${r.stdout}${r.stderr}`);
});

t.test('the shipped file starts and serves under ulimit -n 1024', async (t) => {
  const [front, stats] = [await freePort(), await freePort()];
  const cfg = join(t.testdir(), 'haproxy.cfg');
  // Only the address changes (the replicas' names need not resolve: init-addr none), and a stats page.
  const text = readFileSync(SHIPPED, 'utf8').replace(/^\s*bind :8540$/m, `  bind 127.0.0.1:${front}`);
  t.not(text, readFileSync(SHIPPED, 'utf8'), 'the bind line was found');
  writeFileSync(cfg, `${text}\nlisten stats\n  bind 127.0.0.1:${stats}\n  stats enable\n  stats uri /stats\n`);
  // Soft and hard limit 1024: the worst a stock shell gives; HAProxy cannot raise it.
  const proc = spawn('sh', ['-c', `ulimit -n 1024 && exec ${HAPROXY} -db -f "$0"`, cfg], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  proc.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  t.teardown(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  });
  const frontend = await waitFor('the stats page', async () => {
    if (proc.exitCode !== null) throw new Error(`haproxy exited ${proc.exitCode}: ${err.slice(-400)}`);
    const csv = await (await request(`http://127.0.0.1:${stats}/stats;csv`)).body.text();
    const [head, ...lines] = csv.trim().split('\n');
    const header = head!.replace(/^# /, '').split(',');
    const row = lines.map((l) => l.split(',')).find((f) => f[0] === 'jsonrpc' && f[1] === 'FRONTEND');
    return row === undefined ? false : { slim: Number(row[header.indexOf('slim')]) };
  });
  t.equal(proc.exitCode, null, 'still running');
  t.ok(frontend.slim > 100 && frontend.slim <= 512, `its cap follows the limit: ${frontend.slim} connections`);
  // No replica listens: the balancer answers its JSON-RPC error, so the front is serving.
  const r = await request(`http://127.0.0.1:${front}/`, { method: 'POST', body: '{}' });
  const body = await r.body.text();
  t.equal(r.statusCode, 503, body);
  t.match(body, /"code":-32005/);
  t.notMatch(err, /Cannot raise FD limit/);
});
