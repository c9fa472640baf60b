/**
 * A SIGHUP while Switchyard is still starting (`switchyard start` boots the devnet first) must not
 * end the process: it is logged and the file is read again once the proxy runs (docs/configuration.md, "Reload").
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { listeningPorts, runCli } from '../helpers/cli.js';
import { freePort } from '../helpers/ports.js';
import { get, post } from '../helpers/rpc.js';
import { waitFor } from '../helpers/wait.js';

/** Pids whose parent is `pid` (read from /proc, so no helper process is needed). */
function children(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The fields after the command name (which may hold spaces) start at the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(entry));
    } catch {
      // The process ended while the list was read.
    }
  }
  return out;
}

t.test('SIGHUP while the devnet boots: logged, the process lives on and reloads once running', async (t) => {
  const nodePort = await freePort();
  const controlPort = await freePort();
  const file = join(t.testdir(), 'config.yaml');
  writeFileSync(
    file,
    `
server: { host: 127.0.0.1, port: 0, wsPort: null, shutdownDelayMs: 0 }
admin: { host: 127.0.0.1, port: 0 }
upstreams: [ { name: node-0, url: "http://127.0.0.1:${nodePort}" } ]
routing: { headPollMs: 100 }
devnet: { nodes: 1, blockTime: 1, basePort: ${nodePort}, controlPort: ${controlPort} }
uptime: { store: null }
log: { level: info }
`,
  );
  const cli = runCli(t, ['start', '--config', file]);
  const pid = cli.proc.pid!;
  let exited = false;
  void cli.exited.then(() => (exited = true));
  // The handler is installed before the devnet is started: once its anvil runs, a HUP is safe to send,
  // and the proxy cannot be up yet (it starts after the devnet is ready).
  const anvils = await waitFor(
    'the devnet node spawned',
    () => (children(pid).length > 0 ? children(pid) : undefined),
    { intervalMs: 5 },
  );
  // Should the process die before it stops its devnet, its anvil is stopped here, by pid.
  t.teardown(() => {
    for (const p of anvils) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  });
  t.notMatch(cli.stdout(), /switchyard listening/, 'the proxy is not running yet');
  cli.proc.kill('SIGHUP');
  const ports = await waitFor('listening line', () => exited || listeningPorts(cli.stdout()), { timeoutMs: 60_000 });
  t.equal(cli.proc.exitCode, null, `the process lives on (exit ${cli.proc.exitCode}, signal ${cli.proc.signalCode})`);
  t.equal(cli.proc.signalCode, null, 'not ended by the signal');
  t.match(cli.stdout(), /SIGHUP before the proxy is running/, 'the early HUP is logged');
  await waitFor('the early HUP applied once running', () => /configuration reloaded/.test(cli.stdout()));
  if (typeof ports === 'object') {
    await waitFor('ready', async () => (await get(`http://127.0.0.1:${ports.admin}/ready?upstreams=1`)).status === 200);
    t.equal(
      (await post(`http://127.0.0.1:${ports.http}`, '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}')).json().result,
      '0xba',
      'and serves',
    );
  }
  cli.proc.kill('SIGTERM');
  t.equal(await cli.exited, 0, 'SIGTERM stops it');
  await waitFor('its devnet node stopped with it', () => anvils.every((p) => !alive(p)));
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
