/**
 * server.proxyProtocol (docs/limits.md "PROXY protocol"): a PROXY header (v1 text or v2 binary) from a peer
 * in server.trustedProxies names the client; each client so named gets its own rate-limit bucket
 * and its own address in the request log. From any other peer the header is refused (the
 * connection is closed, counted by reason); no header is plain HTTP; with the option off a header
 * is just a bad HTTP request. Then the same through a real HAProxy (`send-proxy-v2`) in TCP mode,
 * with clients on other loopback addresses than HAProxy's own.
 * Budget: 1 unit per second plus a one-off burst of 9 per hour, so a batch of 15 from one client
 * is exactly 10 admitted and 5 refused, and a client sharing that bucket would get at most one
 * call a second for the rest of the hour: the buckets' separation does not depend on timing.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pp from 'proxy-protocol-js';
import t, { type Test } from 'tap';
import { sourceOf } from '../../src/server/proxy-protocol.js';
import { startAnvil } from '../helpers/anvil.js';
import { freePort } from '../helpers/ports.js';
import { startSwitchyard, type RunningSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { memoryLogger, metric } from '../limits/fixtures/tools.js';

const HAPROXY = '/usr/sbin/haproxy';
const PER_IP = { ratePerSec: 1, burst: 10, burstWindowSec: 3600 };

const v1 = (src: string, family = 'TCP4', dst = '10.0.0.1'): Buffer =>
  Buffer.from(`PROXY ${family} ${src} ${dst} 40000 8545\r\n`);

function v2(src: number[], opts: { local?: boolean } = {}): Buffer {
  const address =
    src.length === 4
      ? new pp.IPv4ProxyAddress(pp.IPv4Address.createFrom(src), 40000, pp.IPv4Address.createFrom([10, 0, 0, 1]), 8545)
      : new pp.IPv6ProxyAddress(
          pp.IPv6Address.createFrom(src),
          40000,
          pp.IPv6Address.createFrom(Array.from({ length: 16 }, () => 0)),
          8545,
        );
  return Buffer.from(
    new pp.V2ProxyProtocol(
      opts.local ? pp.Command.LOCAL : pp.Command.PROXY,
      pp.TransportProtocol.STREAM,
      address,
    ).build(),
  );
}

const batch = (n: number): string =>
  JSON.stringify(
    Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: i + 1, method: 'eth_chainId', params: [] })),
  );

function httpRequest(body: string): Buffer {
  return Buffer.from(
    `POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}

interface Answer {
  status: number;
  body: string;
}

/**
 * Sends `prefix` (a PROXY header or nothing) then each request on one connection, in `pieces`
 * writes for the first; the answers in order, or 'closed' when the connection ended before one.
 */
function exchange(
  port: number,
  prefix: Buffer | null,
  bodies: string[],
  opts: { pieces?: number; localAddress?: string } = {},
): Promise<Answer[] | 'closed'> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1', localAddress: opts.localAddress });
    const answers: Answer[] = [];
    let got = Buffer.alloc(0);
    let next = 0;
    const send = (): void => {
      const req = httpRequest(bodies[next++]!);
      const first = next === 1 && prefix !== null ? Buffer.concat([prefix, req]) : req;
      const pieces = next === 1 ? (opts.pieces ?? 1) : 1;
      const size = Math.ceil(first.length / pieces);
      for (let i = 0; i < first.length; i += size) socket.write(first.subarray(i, i + size));
    };
    socket.on('connect', send);
    socket.on('data', (d: Buffer) => {
      got = Buffer.concat([got, d]);
      for (;;) {
        const head = got.indexOf('\r\n\r\n');
        if (head < 0) return;
        const headers = got.subarray(0, head).toString('latin1');
        const length = Number(/content-length: (\d+)/i.exec(headers)?.[1] ?? 0);
        if (got.length < head + 4 + length) return;
        answers.push({
          status: Number(headers.split(' ')[1]),
          body: got.subarray(head + 4, head + 4 + length).toString('utf8'),
        });
        got = got.subarray(head + 4 + length);
        if (answers.length === bodies.length) {
          socket.end();
          return resolve(answers);
        }
        send();
      }
    });
    socket.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' ? resolve('closed') : reject(err)));
    socket.on('close', () => resolve(answers.length === bodies.length ? answers : 'closed'));
  });
}

/** How many of a batch answer's calls got a result and how many the -32005 rate-limit error. */
function tally(a: Answer): { ok: number; limited: number } {
  const out = JSON.parse(a.body) as { result?: string; error?: { code: number } }[];
  return {
    ok: out.filter((o) => o.result === '0xba').length,
    limited: out.filter((o) => o.error?.code === -32005).length,
  };
}

const anvil = await startAnvil();
t.teardown(() => anvil.stop());

async function start(
  t: Test,
  server: Record<string, unknown>,
): Promise<{ sy: RunningSwitchyard; port: number; ips: () => string[] }> {
  const logs = memoryLogger('info');
  const sy = await startSwitchyard(
    t,
    { upstreams: [{ name: 'a', url: anvil.url }], server, rateLimit: { perIp: PER_IP } },
    { logger: logs.logger },
  );
  const ips = (): string[] =>
    logs
      .lines()
      .filter((l) => l.msg === 'request' && l.calls > 0)
      .map((l) => l.ip as string);
  return { sy, port: Number(new URL(sy.url).port), ips };
}

t.test('the source address a header carries', async (t) => {
  t.equal(sourceOf(v1('203.0.113.7')), '203.0.113.7', 'v1 TCP4');
  t.equal(sourceOf(v1('2001:db8::7', 'TCP6', '2001:db8::1')), '2001:db8::7', 'v1 TCP6');
  t.equal(sourceOf(Buffer.from('PROXY UNKNOWN\r\n')), null, 'v1 UNKNOWN: the peer stays');
  t.equal(sourceOf(v2([198, 51, 100, 9])), '198.51.100.9', 'v2 IPv4');
  t.equal(
    sourceOf(v2([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5])),
    '2001:db8::5',
    'v2 IPv6, written compressed',
  );
  t.equal(
    sourceOf(v2([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 44])),
    '192.0.2.44',
    'v2 IPv4-mapped IPv6 is that IPv4 client',
  );
  t.equal(sourceOf(v2([198, 51, 100, 9], { local: true })), null, 'v2 LOCAL (a health check): the peer stays');
  t.throws(
    () => sourceOf(Buffer.from('PROXY TCP4 not-an-ip 10.0.0.1 1 2\r\n')),
    'a v1 header without an address is an error',
  );
});

t.test('from a trusted peer: each client named by a header has its own bucket and log address', async (t) => {
  const { sy, port, ips } = await start(t, { proxyProtocol: true, trustedProxies: ['127.0.0.1/32', '::1/128'] });

  const a = await exchange(port, v1('203.0.113.7'), [batch(15)]);
  t.not(a, 'closed');
  t.same(
    tally((a as Answer[])[0]!),
    { ok: 10, limited: 5 },
    'v1 client 203.0.113.7: its budget of 10 is spent, 5 refused',
  );
  const b = await exchange(port, v2([198, 51, 100, 9]), [batch(10)], { pieces: 7 });
  t.same(
    tally((b as Answer[])[0]!),
    { ok: 10, limited: 0 },
    'v2 client 198.51.100.9 (header arriving in pieces): a bucket of its own',
  );
  const c = await exchange(port, v2([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5]), [
    batch(3),
    batch(3),
  ]);
  t.same(
    (c as Answer[]).map((x) => tally(x).ok),
    [3, 3],
    'v2 IPv6 client: two requests on one keep-alive connection, both its own',
  );
  const local = await exchange(port, v2([198, 51, 100, 9], { local: true }), [batch(1)]);
  t.equal((local as Answer[])[0]!.status, 200, 'v2 LOCAL is served');
  const plain = await exchange(port, null, [batch(1)]);
  t.equal((plain as Answer[])[0]!.status, 200, 'no header: plain HTTP is served');
  t.same(
    ips(),
    ['203.0.113.7', '198.51.100.9', '2001:db8::5', '2001:db8::5', '127.0.0.1', '127.0.0.1'],
    'the request log names each client; LOCAL and no header: the peer',
  );

  t.equal(
    await exchange(port, Buffer.from('PROXY TCP4 bogus\r\n'), [batch(1)]),
    'closed',
    'a malformed header: closed',
  );
  t.equal(
    await exchange(port, Buffer.from(`PROXY TCP4 ${'1'.repeat(120)}`), [batch(1)]),
    'closed',
    'a v1 line longer than 107 bytes: closed',
  );
  t.equal(
    await metric(sy, 'switchyard_proxy_protocol_refused_total', { reason: 'bad_header' }),
    2,
    'both counted as bad_header',
  );
});

t.test('from an untrusted peer the header is refused', async (t) => {
  const { sy, port, ips } = await start(t, { proxyProtocol: true, trustedProxies: ['10.0.0.0/8'] });
  t.equal(
    await exchange(port, v1('203.0.113.7'), [batch(1)]),
    'closed',
    'v1 header from 127.0.0.1 (not trusted): closed, no answer',
  );
  t.equal(await exchange(port, v2([198, 51, 100, 9]), [batch(1)]), 'closed', 'v2 header: the same');
  t.equal(
    await metric(sy, 'switchyard_proxy_protocol_refused_total', { reason: 'untrusted_header' }),
    2,
    'counted as untrusted_header',
  );
  const plain = await exchange(port, null, [batch(1)]);
  t.equal((plain as Answer[])[0]!.status, 200, 'the same peer without a header is served');
  t.same(ips(), ['127.0.0.1'], 'as itself');
});

t.test('with the option off, a PROXY header is a bad HTTP request', async (t) => {
  const { port } = await start(t, { trustedProxies: ['127.0.0.1/32'] });
  const r = await exchange(port, v1('203.0.113.7'), [batch(1)]);
  t.not(r, 'closed');
  t.equal((r as Answer[])[0]!.status, 400, 'HTTP 400');
});

t.test(
  'behind a real HAProxy sending PROXY v2: clients on other addresses than the balancer get their own buckets',
  async (t) => {
    const { port, ips } = await start(t, { proxyProtocol: true, trustedProxies: ['127.0.0.1/32'] });
    const front = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-proxy-'));
    const cfg = join(dir, 'haproxy.cfg');
    writeFileSync(
      cfg,
      `
defaults
  mode tcp
  timeout connect 2s
  timeout client 30s
  timeout server 30s
frontend rpc
  bind 127.0.0.1:${front}
  default_backend switchyard
backend switchyard
  # HAProxy connects from 127.0.0.1, the one trusted address; clients come from 127.0.0.2 and .3.
  source 127.0.0.1
  server sy 127.0.0.1:${port} send-proxy-v2
`,
    );
    const haproxy = spawn(HAPROXY, ['-db', '-f', cfg], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    haproxy.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    t.teardown(() => {
      if (haproxy.exitCode === null && haproxy.signalCode === null) haproxy.kill('SIGKILL');
    });
    const listening = (): Promise<boolean> =>
      new Promise((resolve) => {
        const s = connect(front, '127.0.0.1');
        s.on('connect', () => {
          s.destroy();
          resolve(true);
        });
        s.on('error', () => resolve(false));
      });
    await waitFor(`HAProxy listening (${stderr.slice(-200)})`, listening);

    const first = await exchange(front, null, [batch(15)], { localAddress: '127.0.0.2' });
    t.same(tally((first as Answer[])[0]!), { ok: 10, limited: 5 }, 'client 127.0.0.2: 10 admitted, 5 refused');
    const second = await exchange(front, null, [batch(10)], { localAddress: '127.0.0.3' });
    t.same(
      tally((second as Answer[])[0]!),
      { ok: 10, limited: 0 },
      'client 127.0.0.3 through the same balancer: its own 10',
    );
    t.same(ips(), ['127.0.0.2', '127.0.0.3'], 'the request log names the clients, not the balancer');
  },
);
