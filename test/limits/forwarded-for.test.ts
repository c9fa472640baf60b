/**
 * Client identity for the per-IP limits (SPEC 6, docs/limits.md "Client identity"): the socket's peer, and
 * X-Forwarded-For only when that peer is a trusted proxy, walked right to left past trusted hops.
 * A client that writes its own X-Forwarded-For must not get a fresh budget per forged address.
 * Each client below gets one call for the whole test (ONE_CALL), so no figure depends on where a
 * 1-second window ends.
 */
import t, { type Test } from 'tap';
import { ConfigError, validateConfig } from '../../src/config/load.js';
import { ClientIp } from '../../src/server/client-ip.js';
import { limitKey } from '../../src/net/cidrs.js';
import { startAnvil } from '../helpers/anvil.js';
import { startSwitchyard, type RunningSwitchyard } from '../helpers/switchyard.js';
import { Client, isRateLimited, memoryLogger, ONE_CALL, rpc, type Reply } from './fixtures/tools.js';

const anvil = await startAnvil();
t.teardown(() => anvil.stop());

const BUDGET = 1;

interface Fresh {
  sy: RunningSwitchyard;
  client: Client;
  /** The client IP each request was logged with, in log order. */
  loggedIps: () => string[];
  /** The request log lines. */
  requests: () => any[];
  close(): Promise<void>;
}

async function fresh(t: Test, trustedProxies: string[]): Promise<Fresh> {
  const logs = memoryLogger('info');
  const sy = await startSwitchyard(
    t,
    { upstreams: [{ name: 'a', url: anvil.url }], server: { trustedProxies }, rateLimit: ONE_CALL },
    { logger: logs.logger },
  );
  const client = new Client(t, sy.url);
  await client.warm(40);
  const requests = (): any[] => logs.lines().filter((l) => l.msg === 'request' && l.calls > 0);
  const loggedIps = (): string[] => requests().map((l) => l.ip as string);
  return { sy, client, loggedIps, requests, close: () => sy.close() };
}

const ok = (r: Reply): boolean => r.status === 200 && r.json?.result === '0xba';
const refused = (r: Reply): boolean => r.status === 429 && isRateLimited(r.json);
const chainId = (): object => rpc('eth_chainId');

t.test('untrusted peer: a forged X-Forwarded-For changes nothing, every request is 127.0.0.1', async (t) => {
  const { client, loggedIps, requests } = await fresh(t, []);
  const replies = await client.burst(30, chainId, (i) => ({ 'x-forwarded-for': `198.51.100.${i + 1}` }));
  t.equal(replies.filter(ok).length, BUDGET, 'thirty different forged addresses share one budget of one call');
  const lines = requests();
  t.equal(
    lines.filter((l) => l.status === 429 && l.errors === 1).length,
    29,
    'the log line of each refused request: status 429, errors 1',
  );
  t.equal(
    lines.filter((l) => l.status === 200 && l.errors === 0).length,
    1,
    'of the admitted one: status 200, errors 0',
  );
  t.equal(replies.filter(refused).length, 30 - BUDGET, 'the rest are refused');
  const ips = loggedIps();
  t.equal(ips.length, 30);
  t.ok(
    ips.every((ip) => ip === '127.0.0.1'),
    'every request is logged as the socket peer 127.0.0.1',
  );
  const chained = await (await fresh(t, [])).client.burst(30, chainId, (i) => ({
    'x-forwarded-for': `203.0.113.${i}, 127.0.0.1`,
  }));
  t.equal(chained.filter(ok).length, BUDGET, 'nor does a forged chain of hops ending in a "trusted" address');
});

t.test('trusted proxy 127.0.0.1/32: X-Forwarded-For names the client, each with its own budget', async (t) => {
  const { client, loggedIps } = await fresh(t, ['127.0.0.1/32']);
  const a = await client.burst(15, chainId, () => ({ 'x-forwarded-for': '10.0.0.1' }));
  const b = await client.burst(15, chainId, () => ({ 'x-forwarded-for': '10.0.0.2' }));
  const proxyItself = await client.burst(15, chainId);
  t.equal(a.filter(ok).length, BUDGET, 'client 10.0.0.1: one admitted');
  t.equal(a.filter(refused).length, 14, 'client 10.0.0.1: 14 refused');
  t.equal(b.filter(ok).length, BUDGET, 'client 10.0.0.2 has its own budget');
  t.equal(b.filter(refused).length, 14);
  t.equal(proxyItself.filter(ok).length, BUDGET, 'requests without the header are the proxy itself: another budget');
  const ips = loggedIps();
  t.equal(ips.filter((ip) => ip === '10.0.0.1').length, 15, 'logged as 10.0.0.1');
  t.equal(ips.filter((ip) => ip === '10.0.0.2').length, 15, 'logged as 10.0.0.2');
  t.equal(ips.filter((ip) => ip === '127.0.0.1').length, 15, 'logged as 127.0.0.1');
});

t.test('IPv6 clients are limited by their /64: addresses of one allocation share a budget', async (t) => {
  const { client, loggedIps } = await fresh(t, ['127.0.0.1/32']);
  const sameNet = await client.burst(15, chainId, (i) => ({
    'x-forwarded-for': `2001:db8:1:2::${(i + 1).toString(16)}`,
  }));
  t.equal(sameNet.filter(ok).length, BUDGET, '15 addresses of 2001:db8:1:2::/64 share one budget');
  t.equal(sameNet.filter(refused).length, 14);
  const otherNet = await client.burst(3, chainId, () => ({ 'x-forwarded-for': '2001:db8:1:3::1' }));
  t.equal(otherNet.filter(ok).length, BUDGET, 'the next /64 has its own');
  t.ok(loggedIps().includes('2001:db8:1:2::f'), 'the log keeps the full address');
});

t.test('right to left past trusted hops; a forged left-most entry is never the client', async (t) => {
  const { client, loggedIps } = await fresh(t, ['127.0.0.1/32']);
  // 1.2.3.4 spends its whole budget through a chain of two trusted hops ...
  const spend = await client.burst(BUDGET, chainId, () => ({ 'x-forwarded-for': '1.2.3.4, 127.0.0.1' }));
  // ... then tries again with a forged address in front: still 1.2.3.4.
  const forged = await client.burst(5, chainId, () => ({ 'x-forwarded-for': '6.6.6.6, 1.2.3.4' }));
  const plain = await client.post(chainId(), { 'x-forwarded-for': '1.2.3.4' });
  // 6.6.6.6 as the real client (the right-most untrusted hop) is someone else, with its own budget.
  const other = await client.post(chainId(), { 'x-forwarded-for': '1.2.3.4, 6.6.6.6' });
  t.equal(spend.filter(ok).length, BUDGET, '"1.2.3.4, 127.0.0.1": its one call admitted for 1.2.3.4');
  t.equal(forged.filter(refused).length, 5, '"6.6.6.6, 1.2.3.4": charged to 1.2.3.4, which is over');
  t.ok(refused(plain), '"1.2.3.4": the same client, over');
  t.ok(ok(other), '"1.2.3.4, 6.6.6.6": the client is 6.6.6.6, with a budget of its own');
  const ips = loggedIps();
  t.same(new Set(ips.slice(0, BUDGET + 6)), new Set(['1.2.3.4']), 'the first 7 requests logged as 1.2.3.4');
  t.equal(ips[BUDGET + 6], '6.6.6.6', 'the last one as 6.6.6.6');
});

t.test('ClientIp', async (t) => {
  const none = new ClientIp([]);
  t.equal(none.resolve('10.1.2.3', '1.2.3.4'), '10.1.2.3', 'no trusted proxies: the header is ignored');
  t.equal(none.resolve('::ffff:10.1.2.3', undefined), '10.1.2.3', '::ffff:a.b.c.d is the IPv4 client a.b.c.d');
  t.equal(none.resolve('::1', '1.2.3.4'), '::1');
  t.equal(
    none.resolve(undefined, '1.2.3.4'),
    'unknown',
    'a socket already gone: one shared "unknown" client, never the header',
  );

  const lb = new ClientIp(['10.0.0.0/8', '192.168.1.7', '2001:db8::/32']);
  t.equal(lb.resolve('172.16.0.1', '1.2.3.4'), '172.16.0.1', 'an untrusted peer: its own address');
  t.equal(lb.resolve('10.9.9.9', undefined), '10.9.9.9', 'a trusted peer without the header: the peer');
  t.equal(lb.resolve('10.9.9.9', ''), '10.9.9.9', 'an empty header: the peer');
  t.equal(lb.resolve('10.9.9.9', '1.2.3.4'), '1.2.3.4', 'a trusted peer: the right-most untrusted hop');
  t.equal(lb.resolve('::ffff:10.9.9.9', '1.2.3.4'), '1.2.3.4', 'a trusted peer seen as ::ffff:10.9.9.9');
  t.equal(
    lb.resolve('192.168.1.7', '6.6.6.6, 1.2.3.4, 10.0.0.2, 192.168.1.7'),
    '1.2.3.4',
    'walked right to left past every trusted hop',
  );
  t.equal(lb.resolve('10.9.9.9', '6.6.6.6,1.2.3.4'), '1.2.3.4', 'no spaces');
  t.equal(lb.resolve('10.9.9.9', ['6.6.6.6', '1.2.3.4']), '1.2.3.4', 'repeated headers are one list, in order');
  t.equal(lb.resolve('10.9.9.9', '  1.2.3.4  '), '1.2.3.4', 'whitespace around a hop');
  t.equal(lb.resolve('10.9.9.9', '1.2.3.4, ::ffff:5.6.7.8'), '5.6.7.8', 'a mapped IPv4 hop is the IPv4 client');
  t.equal(lb.resolve('2001:db8::1', '2001:db9::5'), '2001:db9::5', 'IPv6 peer and hop');
  t.equal(lb.resolve('2001:db8::1', '2001:db9::5, 2001:db8:ffff::1'), '2001:db9::5', 'IPv6 trusted hop skipped');
  t.equal(
    lb.resolve('10.9.9.9', 'not-an-ip'),
    '10.9.9.9',
    'a garbage hop where the client should be: the peer, not the garbage',
  );
  t.equal(
    lb.resolve('10.9.9.9', '1.2.3.4, bogus'),
    '10.9.9.9',
    'garbage right of the client: the peer (the proxy wrote something unreadable)',
  );
  t.equal(lb.resolve('10.9.9.9', 'bogus, 1.2.3.4'), '1.2.3.4', 'garbage left of the client never matters');
  t.equal(lb.resolve('10.9.9.9', '10.0.0.1, 10.0.0.2'), '10.0.0.1', 'every hop trusted: the farthest one');
  t.equal(lb.resolve('10.9.9.9', '1.1.1.1:1234'), '1.1.1.1', 'an IPv4 hop with a port: the address');
  t.equal(lb.resolve('10.9.9.9', '[2001:db9::1]:443'), '2001:db9::1', 'a bracketed IPv6 hop with a port: the address');
  t.equal(lb.resolve('10.9.9.9', '[2001:db9::1]'), '2001:db9::1', 'a bracketed IPv6 hop without a port');
  t.equal(
    lb.resolve('10.9.9.9', '2001:db9::1:443'),
    '2001:db9::1:443',
    'a bare IPv6 hop has no port: all of it is the address',
  );
  t.equal(lb.resolve('10.9.9.9', '1.1.1.1:1234, 10.0.0.2:80'), '1.1.1.1', 'a trusted hop with a port is still trusted');
  t.equal(lb.resolve('10.9.9.9', '1.1.1.1:port'), '10.9.9.9', 'not a port: garbage, so the peer');
  t.equal(lb.resolve('10.9.9.9', '[not-an-ip]:80'), '10.9.9.9', 'brackets around garbage: the peer');

  t.throws(() => new ClientIp(['not-a-cidr']), /expected an IP or CIDR/, 'a bad CIDR is refused when built');
  t.throws(
    () => new ClientIp(['10.0.0.0/33']),
    /expected an IP or CIDR/,
    'an IPv4 prefix over 32 is refused with the same wording',
  );
  t.throws(() => new ClientIp(['2001:db8::/129']), /expected an IP or CIDR/, 'an IPv6 prefix over 128 too');

  // The configuration should refuse such a prefix before anything is built (exit 2, key path named).
  for (const [key, section] of [
    ['server.trustedProxies[0]', 'server'],
    ['rateLimit.exempt[0]', 'rateLimit'],
  ] as const) {
    const value = section === 'server' ? { trustedProxies: ['10.0.0.0/33'] } : { exempt: ['10.0.0.0/33'] };
    let problems: string[] = [];
    try {
      validateConfig({ upstreams: [{ name: 'a', url: 'http://127.0.0.1:1' }], [section]: value });
    } catch (err) {
      if (err instanceof ConfigError) problems = err.problems;
    }
    t.ok(
      problems.some((p) => p.startsWith(key)),
      `${key}: "10.0.0.0/33" refused by the config check (${problems.join('; ') || 'accepted'})`,
    );
  }
});

t.test('limitKey: IPv4 as it is, IPv6 by its /64', async (t) => {
  const rows: [string, string][] = [
    ['10.0.0.1', '10.0.0.1'],
    ['2001:db8:1:2::5', '2001:db8:1:2::/64'],
    ['2001:0db8:0001:0002:ffff:0:0:1', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['64:ff9b::192.0.2.1', '64:ff9b:0:0::/64'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:db8:1:2:3::', '2001:db8:1:2::/64'],
    ['unknown', 'unknown'],
  ];
  for (const [ip, key] of rows) t.equal(limitKey(ip), key, ip);
});
