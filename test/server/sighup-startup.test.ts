/**
 * A SIGHUP while Switchyard is still starting (`switchyard start` boots the devnet first) must not
 * end the process: it is logged and the file is read again once the proxy runs (docs/configuration.md, "Reload").
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
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

/**
 * `switchyard start` with a devnet on two ports picked free, HUPed as soon as its node is spawned;
 * resolves once it listens or has ended. The ports must be told to the devnet, so another process
 * may take one between the pick and the bind (the devnet then ends with EADDRINUSE): null then.
 */
async function startAndHup(t: Test) {
  const nodePort = await freePort();
  const controlPort = await freePort();
  const file = join(t.testdir(), `config-${nodePort}.yaml`);
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
  const early = cli.stdout();
  cli.proc.kill('SIGHUP');
  const ports = await waitFor('listening line', () => exited || listeningPorts(cli.stdout()), { timeoutMs: 60_000 });
  if (exited && /EADDRINUSE/.test(cli.stdout() + cli.stderr())) return null;
  return { cli, anvils, early, ports };
}

t.test('SIGHUP while the devnet boots: logged, the process lives on and reloads once running', async (t) => {
  let started = await startAndHup(t);
  for (let tries = 1; started === null && tries < 3; tries++) started = await startAndHup(t);
  if (started === null) throw new Error('a devnet port was taken three times over');
  const { cli, anvils, early, ports } = started;
  t.notMatch(early, /switchyard listening/, 'the proxy was not running yet');
  // Its last lines say why, should it have ended.
  const tail =
    cli.proc.exitCode !== null ? `: ${(cli.stdout() + cli.stderr()).trim().split('\n').slice(-3).join(' | ')}` : '';
  t.equal(
    cli.proc.exitCode,
    null,
    `the process lives on (exit ${cli.proc.exitCode}, signal ${cli.proc.signalCode})${tail}`,
  );
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
