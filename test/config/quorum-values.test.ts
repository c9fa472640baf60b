// routing.quorum and upstreams[].group (SPEC 2, 4.9): a rule's numbers must be able to agree
// (min <= of, minGroups <= min), and only reads of the method table may be asked of several nodes:
// a write would be sent several times, a filter lives on one node, a subscription and a local
// answer ask no node. Each refusal names the key path and says why.

import t from 'tap';
import { ConfigError, validateConfig } from '../../src/config/load.js';
import type { ConfigInput } from '../../src/config/schema.js';

const UP = [{ name: 'a', url: 'http://127.0.0.1:8545' }];

function problemsOf(input: Partial<ConfigInput>): string[] {
  try {
    validateConfig({ upstreams: UP, ...input });
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

const quorum = (...rules: unknown[]): Partial<ConfigInput> => ({ routing: { quorum: rules } as never });

t.test('defaults: no rule, 256 in flight, no group', async (t) => {
  const c = validateConfig({ upstreams: UP });
  t.strictSame(c.routing.quorum, []);
  t.equal(c.routing.quorumMaxInFlight, 256);
  t.equal(c.upstreams[0]!.group, null);
  const r = validateConfig({ upstreams: UP, ...quorum({ methods: ['eth_getBalance'] }) });
  t.strictSame(
    r.routing.quorum,
    [{ methods: ['eth_getBalance'], min: 2, of: 3, minGroups: 1 }],
    'a rule with its defaults',
  );
});

t.test('a rule whose numbers cannot agree is refused by key path', async (t) => {
  t.strictSame(problemsOf(quorum({ methods: ['eth_getBalance'], min: 4, of: 3 })), [
    'routing.quorum[0].min: expected min <= of (3), got 4',
  ]);
  t.strictSame(problemsOf(quorum({ methods: ['eth_getBalance'], min: 2, of: 3, minGroups: 3 })), [
    'routing.quorum[0].minGroups: expected minGroups <= min (2), got 3',
  ]);
  t.equal(problemsOf(quorum({ methods: ['eth_getBalance'], min: 0 })).length, 1, 'min 0');
  t.equal(problemsOf(quorum({ methods: [] })).length, 1, 'no method');
});

t.test('only reads of the method table', async (t) => {
  const cases: [string, RegExp][] = [
    [
      'eth_sendRawTransaction',
      /expected a read method, got "eth_sendRawTransaction" \(a write would be sent to several nodes\)/,
    ],
    ['eth_newFilter', /filter lives on one node/],
    ['eth_getFilterChanges', /filter lives on one node/],
    ['eth_subscribe', /subscription is served by Switchyard itself/],
    ['eth_blockNumber', /answered by Switchyard itself/],
    ['eth_getBalanceX', /expected a read method of the method table/],
  ];
  for (const [m, why] of cases) {
    const p = problemsOf(quorum({ methods: ['eth_getBalance', m] }));
    t.equal(p.length, 1, `${m}: one problem`);
    t.match(p[0], /^routing\.quorum\[0\]\.methods\[1\]: /, `${m}: names the key path`);
    t.match(p[0], why, `${m}: says why`);
  }
  t.strictSame(problemsOf(quorum({ methods: ['eth_call', 'eth_getBlockByNumber', 'eth_getLogs'] })), [], 'reads pass');
});

t.test('a method in two rules is refused', async (t) => {
  t.strictSame(problemsOf(quorum({ methods: ['eth_getBalance'] }, { methods: ['eth_call', 'eth_getBalance'] })), [
    'routing.quorum[1].methods[1]: expected each method in one rule only, got "eth_getBalance" again',
  ]);
});

t.test('a group is a name', async (t) => {
  t.strictSame(problemsOf({ upstreams: [{ ...UP[0]!, group: 'acme-1' }] }), []);
  t.equal(problemsOf({ upstreams: [{ ...UP[0]!, group: 'a b' }] }).length, 1);
});
