/**
 * The open-file limit against server.maxConnections (issue 22, item 7): started with a hard limit
 * of 256 descriptors (prlimit; Node raises its soft limit only up to the hard one), Switchyard
 * logs a warning that names the limit, what the configuration needs and the cap it lowered
 * server.maxConnections to; connections past that cap are closed at once instead of accept()
 * failing for every client, and once they are gone another client is served.
 */
import { spawn } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { request } from 'undici';
import { FD_RESERVE, fdBudget, parseFdLimit } from '../../src/limits/fd-limit.js';
import { startAnvil } from '../helpers/anvil.js';
import { listeningPorts, MAIN } from '../helpers/cli.js';
import { stopProcess } from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            1024                 524288               files
Max locked memory         8388608              8388608              bytes
`;

t.test('parseFdLimit and fdBudget', async (t) => {
  t.equal(parseFdLimit(LIMITS), 1024, 'the soft limit');
  t.equal(parseFdLimit(LIMITS.replace('1024   ', 'unlimited')), null, 'unlimited: nothing to check');
  t.equal(parseFdLimit('garbage'), null);
  t.same(
    fdBudget(10_000, [128, 128], null),
    { needed: 10_000 + 256 + FD_RESERVE, maxConnections: 10_000, short: false },
    'unknown limit: the configured cap',
  );
  t.same(
    fdBudget(10_000, [128], 65_536),
    { needed: 10_000 + 128 + FD_RESERVE, maxConnections: 10_000, short: false },
    'enough descriptors',
  );
  t.same(
    fdBudget(10_000, [128, 128, 128], 1024),
    { needed: 10_000 + 384 + FD_RESERVE, maxConnections: 1024 - 384 - FD_RESERVE, short: true },
    'too few: the cap fits the limit',
  );
});

t.test('started under a 256-descriptor limit: warned, capped, and still serving', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const file = join(t.testdir(), 'config.yaml');
  writeFileSync(
    file,
    `
server: { host: 127.0.0.1, port: 0, wsPort: null, maxConnectionsPerIp: 1000 }
admin: { host: 127.0.0.1, port: 0 }
upstreams: [ { name: solo, url: "${anvil.url}" } ]
uptime: { store: null }
log: { level: info, requests: 'off' }
`,
  );
  const proc = spawn('prlimit', ['--nofile=256:256', process.execPath, MAIN, '--config', file], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => stopProcess(proc));
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr!.resume();
  const ports = await waitFor('listening line', () => listeningPorts(out));
  const warning = out
    .split('\n')
    .filter((l) => l.includes('open-file limit'))
    .map(
      (l) =>
        JSON.parse(l) as { level: string; fdLimit: number; needed: number; maxConnections: number; cappedAt: number },
    );
  t.equal(warning.length, 1, 'one warning at start');
  // The one upstream's connections: maxConnections (128) and its held lane, heldConnections (16).
  const upstream = 128 + 16;
  const cap = 256 - upstream - FD_RESERVE;
  t.match(
    warning[0],
    { level: 'warn', fdLimit: 256, needed: 10_000 + upstream + FD_RESERVE, maxConnections: 10_000, cappedAt: cap },
    `it names the limit, the need and the cap (${cap})`,
  );

  const url = `http://127.0.0.1:${ports.http}`;
  const held: Socket[] = [];
  const closed: boolean[] = [];
  t.teardown(() => held.forEach((s) => s.destroy()));
  await Promise.all(
    Array.from(
      { length: cap + 20 },
      (_, i) =>
        new Promise<void>((resolve) => {
          const s = connect(ports.http, '127.0.0.1');
          held.push(s);
          closed[i] = false;
          s.on('error', () => undefined);
          s.once('close', () => (closed[i] = true));
          s.once('connect', () => resolve());
          s.once('error', () => resolve());
        }),
    ),
  );
  await waitFor('the 20 past the cap closed', () => closed.filter(Boolean).length >= 20, { timeoutMs: 10_000 });
  t.equal(closed.filter(Boolean).length, 20, `${cap} held, the 20 past the cap closed at once`);
  t.equal(proc.exitCode, null, 'the process runs on');
  for (const s of held) s.destroy();
  const answered = await waitFor('another client served once they are gone', async () => {
    const r = await request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}',
    });
    const text = await r.body.text();
    return text.includes('"result"') ? text : undefined;
  });
  t.equal(answered, '{"jsonrpc":"2.0","id":1,"result":"0xba"}');
});
