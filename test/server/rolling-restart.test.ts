/**
 * Rolling restart behind a real balancer (SPEC 9): HAProxy checks each replica's /ready on the admin
 * port; 20 clients call through it without pause while each of two replicas in front of one anvil
 * is SIGTERMed and started again in turn. No call may fail, and every old process exits 0.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { startAnvil } from '../helpers/anvil.js';
import { runCli, type Cli } from '../helpers/cli.js';
import { freePort } from '../helpers/ports.js';
import { waitFor } from '../helpers/wait.js';

const HAPROXY = '/usr/sbin/haproxy';
const CLIENTS = 20;

interface Replica {
  name: string;
  http: number;
  admin: number;
  file: string;
  cli?: Cli;
}

t.test('rolling restart behind HAProxy checking /ready loses no call', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const dir = t.testdir();

  const replicas: Replica[] = [];
  for (const name of ['a', 'b']) {
    const r: Replica = { name, http: await freePort(), admin: await freePort(), file: join(dir, `${name}.yaml`) };
    writeFileSync(
      r.file,
      `
server: { host: 127.0.0.1, port: ${r.http}, wsPort: null, shutdownDelayMs: 3000, shutdownGraceMs: 10000 }
admin: { host: 127.0.0.1, port: ${r.admin} }
upstreams: [ { name: anvil, url: "${anvil.url}" } ]
routing: { headPollMs: 250 }
rateLimit: { perIp: null }
uptime: { enabled: false }
log: { level: info, requests: off }
`,
    );
    replicas.push(r);
  }
  const start = async (r: Replica): Promise<void> => {
    r.cli = runCli(t, ['--config', r.file]);
    await waitFor(
      `replica ${r.name} ready`,
      async () => (await request(`http://127.0.0.1:${r.admin}/ready?upstreams=1`)).statusCode === 200,
    );
  };
  for (const r of replicas) await start(r);

  const front = await freePort();
  const statsPort = await freePort();
  const cfg = join(dir, 'haproxy.cfg');
  writeFileSync(
    cfg,
    `
global
  maxconn 2000
defaults
  mode http
  timeout connect 2s
  timeout client 30s
  timeout server 30s
  # A check answered late on a busy machine must not count as a failure: only a 503 or a refusal.
  timeout check 2s
frontend rpc
  bind 127.0.0.1:${front}
  default_backend switchyard
backend switchyard
  balance roundrobin
  option httpchk GET /ready
  http-check expect status 200
  default-server inter 200ms fastinter 200ms downinter 200ms fall 2 rise 1
${replicas.map((r) => `  server ${r.name} 127.0.0.1:${r.http} check port ${r.admin}`).join('\n')}
listen stats
  bind 127.0.0.1:${statsPort}
  stats enable
  stats uri /stats
`,
  );
  const haproxy = spawn(HAPROXY, ['-db', '-f', cfg], { stdio: ['ignore', 'ignore', 'pipe'] });
  let haproxyErr = '';
  haproxy.stderr!.on('data', (d: Buffer) => (haproxyErr += d.toString()));
  t.teardown(() => {
    if (haproxy.exitCode === null && haproxy.signalCode === null) haproxy.kill('SIGKILL');
  });
  /** Each replica's state as HAProxy sees it (UP, DOWN, ...), from its CSV stats. */
  const states = async (): Promise<Record<string, string>> => {
    const res = await request(`http://127.0.0.1:${statsPort}/stats;csv`);
    const lines = (await res.body.text()).trim().split('\n');
    const header = lines[0]!.replace(/^# /, '').split(',');
    const at = (n: string): number => header.indexOf(n);
    const out: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const f = line.split(',');
      if (f[at('pxname')] === 'switchyard' && replicas.some((r) => r.name === f[at('svname')]))
        out[f[at('svname')]!] = f[at('status')]!;
    }
    return out;
  };
  const up = (name: string): Promise<boolean> =>
    waitFor(`HAProxy sees ${name} UP (${haproxyErr.slice(-300)})`, async () => (await states())[name] === 'UP');
  for (const r of replicas) await up(r.name);

  const agent = new Agent({ connections: CLIENTS });
  t.teardown(() => agent.close());
  let stop = false;
  let calls = 0;
  const failures: string[] = [];
  const client = async (i: number): Promise<void> => {
    for (let n = 0; !stop; n++) {
      const body =
        n % 2 === 0
          ? { jsonrpc: '2.0', id: n, method: 'eth_blockNumber' }
          : {
              jsonrpc: '2.0',
              id: n,
              method: 'eth_getBalance',
              params: ['0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266', 'latest'],
            };
      try {
        const res = await request(`http://127.0.0.1:${front}/`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
          dispatcher: agent,
        });
        const text = await res.body.text();
        if (res.statusCode !== 200 || !/"result":"0x/.test(text))
          failures.push(`client ${i}: ${res.statusCode} ${text.slice(0, 200)}`);
      } catch (err) {
        failures.push(`client ${i}: ${(err as Error).message}`);
      }
      calls++;
      // Paced a little: the machine running the test is shared by the replicas and HAProxy.
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  const running = Array.from({ length: CLIENTS }, (_, i) => client(i));
  await waitFor('traffic flowing', () => calls >= 200);

  const exits: (number | null)[] = [];
  for (const r of replicas) {
    const old = r.cli!;
    const before = calls;
    old.proc.kill('SIGTERM');
    exits.push(await old.exited);
    t.ok(calls > before, `calls went on while ${r.name} shut down (${calls - before})`);
    await start(r);
    await up(r.name);
    const restarted = calls;
    await waitFor(`traffic after ${r.name} is back`, () => calls >= restarted + 100);
  }
  stop = true;
  await Promise.all(running);

  t.same(exits, [0, 0], 'each old process exited 0');
  t.same(failures.slice(0, 10), [], `no call failed (${failures.length} of ${calls})`);
  t.ok(calls >= 500, `calls made: ${calls}`);
  t.comment(`rolling restart: ${calls} calls by ${CLIENTS} clients, ${failures.length} failed`);
});
