/**
 * The prober dies (SPEC 12 Replicas): two Switchyard processes (node dist/main.js) on one real
 * redis-server in front of one real anvil, probing every second. The one holding the lease is
 * SIGKILLed (it lets nothing go); the other must take over within 2 probe intervals of the kill
 * and go on probing, and its page keeps the incident made through the dead one's admin port.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { listeningPorts, runCli } from '../helpers/cli.js';
import { startAnvil } from '../helpers/anvil.js';
import { startRedis } from '../helpers/redis.js';
import { get, post } from '../helpers/rpc.js';
import { waitFor } from '../helpers/wait.js';

const PROBE_MS = 1_000;

interface Replica {
  kill(): void;
  url: string;
  admin: string;
}

async function replica(t: Test, name: string, redisUrl: string, nodeUrl: string): Promise<Replica> {
  const file = join(t.testdir(), `${name}.yaml`);
  writeFileSync(
    file,
    `
server: { host: 127.0.0.1, port: 0, wsPort: null }
admin: { host: 127.0.0.1, port: 0 }
upstreams: [ { name: anvil, url: "${nodeUrl}" } ]
redis: "${redisUrl}"
uptime: { probeIntervalMs: ${PROBE_MS} }
log: { level: info, requests: 'off' }
`,
  );
  const cli = runCli(t, ['--config', file]);
  const ports = await waitFor(`${name} listening`, () => listeningPorts(cli.stdout()));
  return {
    kill: () => cli.proc.kill('SIGKILL'),
    url: `http://127.0.0.1:${ports.http}`,
    admin: `http://127.0.0.1:${ports.admin}`,
  };
}

const shared = async (r: Replica): Promise<{ prober: boolean }> =>
  (await get(`${r.admin}/status`)).json().uptime.shared;

t.test('a SIGKILLed prober is replaced within 2 probe intervals', async (t) => {
  const redis = await startRedis(t);
  const node = await startAnvil({ args: ['--block-time', '1'] });
  t.teardown(() => node.stop());
  t.testdir({});
  const a = await replica(t, 'a', redis.url, node.url);
  const b = await replica(t, 'b', redis.url, node.url);
  await waitFor('one prober', async () => (await shared(a)).prober !== (await shared(b)).prober);
  const [prober, other] = (await shared(a)).prober ? [a, b] : [b, a];
  const opened = await post(`${prober.admin}/uptime/incidents`, { title: 'Kept', status: 'monitoring', message: 'x' });
  t.equal(opened.status, 201);
  await waitFor(
    'the incident on the other',
    async () => (await get(`${other.url}/uptime.json`)).json().incidents.length === 1,
  );

  const killed = Date.now();
  prober.kill();
  await waitFor('the other probes', async () => (await shared(other)).prober, { intervalMs: 20 });
  const takeoverMs = Date.now() - killed;
  t.ok(takeoverMs <= 2 * PROBE_MS, `taken over ${takeoverMs} ms after the kill (2 intervals: ${2 * PROBE_MS} ms)`);
  const before = (await get(`${other.url}/uptime.json`)).json().checkedAt;
  await waitFor('a probe of its own', async () => (await get(`${other.url}/uptime.json`)).json().checkedAt !== before);
  t.equal((await get(`${other.url}/uptime.json`)).json().incidents.length, 1, 'the incident is still there');
});
