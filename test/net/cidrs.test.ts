/**
 * The one reading of "an IP or CIDR" (src/net/cidrs.ts), which the config schema and the
 * trusted-proxy and exemption lists share: a table of entries, and membership in a built list.
 */
import t from 'tap';
import { cidrList, inList, parseCidr } from '../../src/net/cidrs.js';

const ENTRIES: [string, ReturnType<typeof parseCidr>][] = [
  ['10.0.0.1', { addr: '10.0.0.1', family: 'ipv4', prefix: null }],
  ['10.0.0.0/8', { addr: '10.0.0.0', family: 'ipv4', prefix: 8 }],
  ['0.0.0.0/0', { addr: '0.0.0.0', family: 'ipv4', prefix: 0 }],
  ['10.0.0.0/32', { addr: '10.0.0.0', family: 'ipv4', prefix: 32 }],
  ['::1', { addr: '::1', family: 'ipv6', prefix: null }],
  ['fd00::/8', { addr: 'fd00::', family: 'ipv6', prefix: 8 }],
  ['::/128', { addr: '::', family: 'ipv6', prefix: 128 }],
  ['10.0.0.0/33', null],
  ['::/129', null],
  ['10.0.0.0/', null],
  ['10.0.0.0/8/8', null],
  ['10.0.0.0/+8', null],
  ['10.0.0.0/1e1', null],
  ['10.0.0.0/0008', null],
  ['10.0.0', null],
  ['example.com', null],
  ['', null],
];

t.test('parseCidr', async (t) => {
  for (const [entry, want] of ENTRIES) t.same(parseCidr(entry), want, JSON.stringify(entry));
});

t.test('cidrList and inList', async (t) => {
  const list = cidrList('server.trustedProxies', ['10.0.0.0/8', '192.0.2.7', 'fd00::/8']);
  t.equal(inList(list, '10.200.3.4'), true, 'in a v4 subnet');
  t.equal(inList(list, '11.0.0.1'), false, 'outside it');
  t.equal(inList(list, '192.0.2.7'), true, 'a single address');
  t.equal(inList(list, '192.0.2.8'), false);
  t.equal(inList(list, 'fd12::1'), true, 'in a v6 subnet');
  t.equal(inList(list, 'not-an-ip'), false, 'anything not an IP is not in a list');
  t.throws(() => cidrList('rateLimit.exempt', ['10.0.0.0/33']), {
    message: 'rateLimit.exempt: expected an IP or CIDR, got "10.0.0.0/33"',
  });
});
