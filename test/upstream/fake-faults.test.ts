/**
 * Faults a real node can't produce, from a scriptable fake node next to a real anvil (both chain
 * 186, same head): a garbage body, a hang after the headers, HTTP 500, a connection reset. (A 429
 * is no failure: it holds the node off, test/routing/hold-off.test.ts.) For each, at least 50 calls all get the anvil's correct answer (failover),
 * none is -32603, the process stays up with nothing left in flight, and the fake node's breaker
 * opens. Then: an open breaker keeps routed calls away for its whole cooldown although the fake
 * node keeps answering the head polls, and lets exactly one trial through afterwards.
 */
import t, { type Test } from 'tap';
import { startAnvil, DEV_ADDRESS } from '../helpers/anvil.js';
import { startFakeNode, type FakeAnswer } from '../helpers/fake-node.js';
import { startSwitchyard, type RunningSwitchyard } from '../helpers/switchyard.js';
import { call, get, post } from '../helpers/rpc.js';
import { waitFor } from '../helpers/wait.js';

interface UpstreamStatus {
  name: string;
  state: string;
  breaker: string;
  inFlight: number;
}

const FAULTS: [string, FakeAnswer][] = [
  ['garbage body', { status: 200, body: 'not json' }],
  ['hang after headers', { hangAfterHeaders: true }],
  ['HTTP 500', { status: 500, body: 'internal server error' }],
  ['HTTP 404', { status: 404, body: '<html><body>404 Not Found</body></html>' }],
  ['connection reset', { reset: true }],
];
const FAILOVER_REASON: Record<string, string> = {
  'garbage body': 'bad_body',
  'hang after headers': 'timeout',
  'HTTP 500': 'http_5xx',
  'HTTP 404': 'http_404',
  'connection reset': 'transport',
};

const anvil = await startAnvil();
t.teardown(() => anvil.stop());
const header = (await call(anvil.url, 'eth_getBlockByNumber', ['latest', false])).result as {
  number: string;
  hash: string;
  parentHash: string;
};
const version = JSON.stringify((await call(anvil.url, 'web3_clientVersion')).result);
const devBalance = JSON.stringify((await call(anvil.url, 'eth_getBalance', [DEV_ADDRESS, 'latest'])).result);

/** What the fake node does with routed calls; head polls are always answered. */
let fault: FakeAnswer = { result: 'fake/healthy' };
const fake = await startFakeNode(t, (method) => {
  // Heads: the anvil's own block, so both nodes are equally eligible for every call.
  if (method === 'eth_getBlockByNumber') return { result: header };
  if (method === 'eth_chainId' || method === 'eth_blockNumber') return undefined;
  return fault;
});
fake.head = Number(header.number);
const routedToFake = (): number =>
  fake.calls.filter((c) => !['eth_getBlockByNumber', 'eth_chainId', 'eth_blockNumber'].includes(c.method)).length;

/** A fresh Switchyard (fresh breakers) in front of the fake node and the anvil. */
async function proxy(
  t: Test,
  opts: { now?: () => number; breaker?: { cooldownMs: number }; hedge?: boolean } = {},
): Promise<{ sy: RunningSwitchyard; statusOf: (name: string) => Promise<UpstreamStatus> }> {
  const sy = await startSwitchyard(
    t,
    {
      upstreams: [
        { name: 'fake', url: fake.url },
        { name: 'anvil', url: anvil.url },
      ],
      routing: {
        upstreamTimeoutMs: 500,
        headPollMs: 100,
        ...(opts.breaker ? { breaker: opts.breaker } : {}),
        ...(opts.hedge === false ? { hedge: { enabled: false } } : {}),
      },
    },
    { now: opts.now },
  );
  const statusOf = async (name: string): Promise<UpstreamStatus> => {
    const s = (await get(`${sy.adminUrl}/status`)).json() as { upstreams: UpstreamStatus[] };
    return s.upstreams.find((u) => u.name === name)!;
  };
  await waitFor(
    'both upstreams healthy',
    async () => (await statusOf('fake')).state === 'healthy' && (await statusOf('anvil')).state === 'healthy',
  );
  return { sy, statusOf };
}

t.match(version, /anvil/i, `the anvil's client version: ${version}`);
t.equal(devBalance, '"0x21e19e0c9bab2400000"', 'the dev account balance');

let nextId = 1;
let round = 0;
for (const [name, answer] of FAULTS) {
  t.test(name, async (t) => {
    fault = { result: 'fake/healthy' };
    // A node that hangs is answered for by hedged reads, whose cut-off first calls leave its breaker
    // alone (docs/routing.md#hedging): what this holds is what the node's own faults do to it.
    const { sy, statusOf } = await proxy(t, { hedge: false });
    round++;
    fault = answer;
    const before = routedToFake();

    const breakerSeen = new Set<string>();
    let done = false;
    const watcher = (async () => {
      while (!done) {
        breakerSeen.add((await statusOf('fake')).breaker);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const opened = (): boolean => breakerSeen.has('open') || breakerSeen.has('half-open');
    const problems: string[] = [];
    let minus32603 = 0;
    let answered = 0;
    let sent = 0;
    const started = Date.now();
    // 5 clients, each call its own HTTP request: web3_clientVersion (never cached) and balances of
    // distinct addresses (cached per address, so each still reaches a node; the anvil says 0x0),
    // plus the dev account's. At least 50 calls, then on until the breaker has been seen open: a
    // hang costs its call 500 ms and a node with a call in flight is rarely chosen, so its 5
    // failures take a few seconds.
    const lane = async (): Promise<void> => {
      while ((sent < 50 || !opened()) && Date.now() - started < 30_000) {
        const n = sent++;
        const [method, params, want] =
          n % 2 === 0
            ? ['web3_clientVersion', [], version]
            : n % 7 === 1
              ? ['eth_getBalance', [DEV_ADDRESS, 'latest'], devBalance]
              : ['eth_getBalance', [`0x${(0x1000000 * round + n).toString(16).padStart(40, '0')}`, 'latest'], '"0x0"'];
        const id = nextId++;
        const r = await post(sy.url, { jsonrpc: '2.0', id, method, params });
        const body = r.json() as { id: number; result?: unknown; error?: { code: number } };
        answered++;
        if (body.error?.code === -32603) minus32603++;
        if (r.status !== 200 || body.id !== id || JSON.stringify(body.result) !== want)
          problems.push(`${method} ${r.status} ${r.text.slice(0, 160)}`);
      }
    };
    await Promise.all([lane(), lane(), lane(), lane(), lane()]);
    done = true;
    await watcher;
    const elapsed = Date.now() - started;

    const tried = routedToFake() - before;
    t.ok(tried > 0, `the fake node was tried (${tried} times), so failover was exercised`);
    t.ok(answered >= 50 && answered === sent, `${answered} calls sent and answered`);
    t.same(
      problems.slice(0, 3),
      [],
      `every call answered with its own id and the anvil's answer (${problems.length} not)`,
    );
    t.equal(minus32603, 0, 'no -32603');
    t.ok(opened(), `the fake node's breaker opened (seen: ${[...breakerSeen].join(', ')})`);
    t.equal((await get(`${sy.adminUrl}/health`)).status, 200, 'the process is up');
    await waitFor('nothing left in flight at the fake node', async () => (await statusOf('fake')).inFlight === 0, {
      timeoutMs: 10_000,
    });
    const m = (await get(`${sy.adminUrl}/metrics`)).text;
    t.match(
      m,
      new RegExp(`switchyard_failovers_total\\{reason="${FAILOVER_REASON[name]}"\\} [1-9]`),
      `failovers counted as ${FAILOVER_REASON[name]}`,
    );
    t.comment(`${name}: ${answered} calls in ${elapsed} ms, ${tried} tried on the fake node first`);
  });
}

t.test('an open breaker keeps routed calls away for its cooldown, then lets one trial through', async (t) => {
  // The routing clock runs with the wall clock plus `skipped`: the cooldown (10 minutes) passes
  // only when the test skips it, so how slow the machine is changes nothing below.
  let skipped = 0;
  const now = (): number => Date.now() + skipped;
  const COOLDOWN_MS = 600_000;
  fault = { result: 'fake/healthy' };
  const { sy, statusOf } = await proxy(t, { now, breaker: { cooldownMs: COOLDOWN_MS } });
  fault = { status: 500, body: 'internal server error' };
  let stop = false;
  let bad = 0;
  let answered = 0;
  const lane = async (): Promise<void> => {
    while (!stop) {
      const r = await post(sy.url, { jsonrpc: '2.0', id: 1, method: 'web3_clientVersion', params: [] });
      answered++;
      if (JSON.stringify(r.json().result) !== version) bad++;
    }
  };
  const lanes = [lane(), lane(), lane()];
  try {
    await waitFor('breaker open', async () => (await statusOf('fake')).breaker === 'open', {
      timeoutMs: 20_000,
      intervalMs: 10,
    });
    await waitFor('no call in flight at the fake node', async () => (await statusOf('fake')).inFlight === 0, {
      timeoutMs: 10_000,
    });
    const atOpen = routedToFake();
    const polls = fake.calls.length - atOpen;
    // Under load for a while: 200 more calls and a few head polls, which go on succeeding and must
    // not close the breaker.
    const mark = answered;
    await waitFor(
      '200 more calls answered and head polls meanwhile',
      () => answered - mark >= 200 && fake.calls.length - routedToFake() > polls + 3,
      { timeoutMs: 60_000 },
    );
    t.equal((await statusOf('fake')).breaker, 'open', 'the breaker stayed open');
    t.equal(routedToFake(), atOpen, 'no routed call reached the failing node while its breaker was open');
    skipped += COOLDOWN_MS;
    await waitFor('the half-open trial', () => routedToFake() > atOpen, { timeoutMs: 15_000 });
    await waitFor('open again after the failed trial', async () => (await statusOf('fake')).breaker === 'open', {
      timeoutMs: 5_000,
      intervalMs: 10,
    });
    const mark2 = answered;
    await waitFor('100 more calls answered', () => answered - mark2 >= 100, { timeoutMs: 60_000 });
    t.equal(routedToFake(), atOpen + 1, 'exactly one trial call, and none after it while open again');
  } finally {
    stop = true;
    await Promise.all(lanes);
  }
  t.equal(bad, 0, 'every call still answered by the anvil');
});
