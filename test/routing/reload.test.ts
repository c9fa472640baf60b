/**
 * Reload under load (SPEC 2): the built CLI runs against node-0 and node-1 of a devnet; while 20
 * clients send batches, the file is rewritten to node-1 and node-2 and SIGHUP sent. /status shows
 * the new set, no call is lost (each answered with a result, its id in its place), node-0 gets no
 * call afterwards. Then an invalid file + SIGHUP is refused with a log line and the running
 * configuration stays.
 */
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDevnet } from '../../src/devnet/index.js';
import { runCli, listeningPorts } from '../helpers/cli.js';
import { DEV_ADDRESS } from '../helpers/anvil.js';
import { get, post } from '../helpers/rpc.js';
import { waitFor } from '../helpers/wait.js';

interface Status {
  upstreams: { name: string; state: string; lag: number | null }[];
}

function configText(upstreams: { name: string; url: string; weight?: number }[]): string {
  return [
    'chainId: 0xba',
    'server: { host: 127.0.0.1, port: 0, wsPort: null, shutdownDelayMs: 0 }',
    'admin: { host: 127.0.0.1, port: 0 }',
    'upstreams:',
    ...upstreams.map(
      (u) => `  - { name: ${u.name}, url: "${u.url}"${u.weight === undefined ? '' : `, weight: ${u.weight}`} }`,
    ),
    'routing: { headPollMs: 100 }',
    'rateLimit: { perIp: null }',
    'log: { level: info }',
    '',
  ].join('\n');
}

function upstreamCallsOf(metrics: string, upstream: string): number {
  return metrics
    .split('\n')
    .filter((l) => l.startsWith('switchyard_upstream_calls_total{') && l.includes(`upstream="${upstream}"`))
    .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
}

t.test('SIGHUP swaps upstreams under load without losing a call; an invalid file is refused', async (t) => {
  const devnet = await startDevnet({ nodes: 3, chainId: 186, blockTimeMs: 250, basePort: 0 });
  t.teardown(() => devnet.stop());
  const [n0, n1, n2] = devnet.nodes();
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-reload-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'switchyard.yaml');
  writeFileSync(file, configText([n0!, n1!]));

  const cli = runCli(t, ['--config', file]);
  const ports = await waitFor('listening', () => listeningPorts(cli.stdout()), { timeoutMs: 30_000 });
  const url = `http://127.0.0.1:${ports.http}`;
  const admin = `http://127.0.0.1:${ports.admin}`;
  const status = async (): Promise<Status> => (await get(`${admin}/status`)).json();
  await waitFor('ready', async () => (await get(`${admin}/ready?upstreams=1`)).status === 200, { timeoutMs: 30_000 });
  t.same(
    (await status()).upstreams.map((u) => u.name),
    ['node-0', 'node-1'],
    'started with node-0 and node-1',
  );

  let stop = false;
  let answered = 0;
  let nextId = 1;
  const problems: string[] = [];
  const client = async (c: number): Promise<void> => {
    while (!stop) {
      const ids = [nextId++, `c${c}-${nextId++}`, nextId++];
      const batch = [
        {
          jsonrpc: '2.0',
          id: ids[0],
          method: 'eth_getBalance',
          params: [`0x${(nextId % 100_000).toString(16).padStart(40, '0')}`, 'latest'],
        },
        { jsonrpc: '2.0', id: ids[1], method: 'eth_getBlockByNumber', params: ['latest', false] },
        { jsonrpc: '2.0', id: ids[2], method: 'eth_getTransactionCount', params: [DEV_ADDRESS, 'latest'] },
      ];
      try {
        const res = await post(url, batch);
        const body = res.json() as { id: unknown; result?: unknown; error?: unknown }[];
        if (res.status !== 200 || !Array.isArray(body) || body.length !== 3) {
          problems.push(`status ${res.status}: ${res.text.slice(0, 200)}`);
          continue;
        }
        body.forEach((r, i) => {
          if (r.id !== ids[i])
            problems.push(`slot ${i}: id ${JSON.stringify(r.id)}, expected ${JSON.stringify(ids[i])}`);
          else if (r.error !== undefined || r.result === null || r.result === undefined)
            problems.push(`id ${JSON.stringify(r.id)}: ${JSON.stringify(r.error ?? r.result)}`);
        });
      } catch (err) {
        problems.push(`HTTP failed: ${(err as Error).message}`);
      }
      answered += 3;
    }
  };
  const clients = Array.from({ length: 20 }, (_, c) => client(c));
  const traffic = (n: number): Promise<boolean> => {
    const target = answered + n;
    return waitFor(`${n} more calls`, () => answered >= target, { timeoutMs: 60_000 });
  };

  try {
    await traffic(600);
    writeFileSync(file, configText([n1!, n2!]));
    cli.proc.kill('SIGHUP');
    await waitFor(
      'new upstream set in /status, node-2 healthy',
      async () => {
        const s = await status();
        return s.upstreams.map((u) => u.name).join() === 'node-1,node-2' && s.upstreams[1]!.state === 'healthy';
      },
      { timeoutMs: 30_000 },
    );
    t.pass('reloaded: /status shows node-1 and node-2');
    await waitFor('reload logged', () => cli.stdout().includes('configuration reloaded'), { timeoutMs: 10_000 });
    // node-0's last in-flight calls finish; from then on it must get nothing.
    await traffic(300);
    const toNode0 = upstreamCallsOf((await get(`${admin}/metrics`)).text, 'node-0');
    const toNode2Before = upstreamCallsOf((await get(`${admin}/metrics`)).text, 'node-2');
    await traffic(1200);
    const m = (await get(`${admin}/metrics`)).text;
    t.equal(upstreamCallsOf(m, 'node-0'), toNode0, 'the removed node-0 gets no more calls');
    t.ok(upstreamCallsOf(m, 'node-2') > toNode2Before, 'the added node-2 takes calls');
    t.notMatch(
      m,
      /switchyard_upstream_head_block_number\{upstream="node-0"\}/,
      "node-0's gauges are gone from /metrics",
    );

    // Re-weighting every upstream at once: the same nodes, so no moment without a routable one.
    const problemsBefore = problems.length;
    writeFileSync(
      file,
      configText([
        { ...n1!, weight: 2 },
        { ...n2!, weight: 3 },
      ]),
    );
    cli.proc.kill('SIGHUP');
    await waitFor(
      'new weights in /status',
      async () => (await status()).upstreams.map((u) => (u as { weight?: number }).weight).join() === '2,3',
      { timeoutMs: 30_000 },
    );
    await traffic(600);
    t.same(problems.slice(problemsBefore, problemsBefore + 5), [], 're-weighting both upstreams loses no call');
  } finally {
    stop = true;
    await Promise.all(clients);
  }
  t.same(
    problems.slice(0, 10),
    [],
    `no call lost: every call answered with a result, ids in place (${answered} calls, ${problems.length} problems)`,
  );
  t.equal(cli.proc.exitCode, null, 'still running');

  // An invalid file: refused with a log line, the running configuration stays.
  const before = (await status()).upstreams.map((u) => u.name);
  const stdoutBefore = cli.stdout().length;
  writeFileSync(file, configText([n0!]).replace('headPollMs: 100', 'headPollMs: -5, bogus: true'));
  cli.proc.kill('SIGHUP');
  const line = await waitFor(
    'refusal logged',
    () =>
      cli
        .stdout()
        .slice(stdoutBefore)
        .split('\n')
        .find((l) => l.includes('refused')),
    { timeoutMs: 10_000 },
  );
  t.match(line, /routing/, `the log line names the problem: ${line.slice(0, 300)}`);
  t.same(
    (await status()).upstreams.map((u) => u.name),
    before,
    'status unchanged: node-1, node-2',
  );
  const r = (
    await post(url, { jsonrpc: '2.0', id: 'after', method: 'eth_getBlockByNumber', params: ['latest', false] })
  ).json();
  t.ok(r.result?.hash, 'calls still answered');
  t.equal(cli.proc.exitCode, null, 'still running after the refused reload');

  // An unreadable file is refused the same way.
  rmSync(file);
  const mark = cli.stdout().length;
  cli.proc.kill('SIGHUP');
  await waitFor('missing file refused', () => cli.stdout().slice(mark).includes('refused'), { timeoutMs: 10_000 });
  t.same(
    (await status()).upstreams.map((u) => u.name),
    before,
    'a missing file changes nothing either',
  );

  cli.proc.kill('SIGTERM');
  t.equal(await cli.exited, 0, 'SIGTERM: clean exit');
});
