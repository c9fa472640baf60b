// parseConfigText / validateConfig: defaults beside each field are filled in, chain ids in either
// spelling become numbers, the result is deeply frozen, and the documented example file parses.

import { readFileSync } from 'node:fs';
import t from 'tap';
import { ConfigError, parseConfigText, validateConfig } from '../../src/config/load.js';

const MINIMAL = 'upstreams:\n  - name: a\n    url: http://127.0.0.1:8545\n';

/** Every object and array reachable from v, with its path. */
function* walk(v: unknown, path = '(root)'): Generator<[string, object]> {
  if (v === null || typeof v !== 'object') return;
  yield [path, v];
  for (const [k, c] of Object.entries(v)) yield* walk(c, Array.isArray(v) ? `${path}[${k}]` : `${path}.${k}`);
}

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

t.test('defaults are filled in', async (t) => {
  const c = parseConfigText(MINIMAL, {});
  t.equal(c.chainId, 186);
  // t.has: these fields with exactly these values; fields added later do not break the test.
  t.has(c.server, {
    host: '0.0.0.0',
    port: 8545,
    wsPort: 8546,
    maxBodyBytes: 5_242_880,
    maxBatchSize: 100,
    requestTimeoutMs: 30_000,
    headersTimeoutMs: 10_000,
    bodyTimeoutMs: 30_000,
    keepAliveTimeoutMs: 5_000,
    cors: { origins: ['*'] },
    trustedProxies: [],
    maxInFlight: 20_000,
    maxInFlightPerIp: 256,
    shutdownGraceMs: 20_000,
  });
  t.has(c.admin, { host: '127.0.0.1', port: 9545 });
  t.equal(c.upstreams.length, 1);
  t.has(c.upstreams[0], { name: 'a', url: 'http://127.0.0.1:8545', weight: 1, tags: [], maxConnections: 128 });
  t.equal(c.upstreams[0]!.ws, undefined);
  // t.has lets an array be longer than the pattern: empty and one-element lists are checked exactly.
  t.strictSame(c.upstreams[0]!.tags, []);
  t.strictSame(c.server.cors.origins, ['*']);
  t.strictSame(c.server.trustedProxies, []);
  t.strictSame([c.methods.allow, c.methods.deny, c.methods.extensions], [[], [], []]);
  t.equal(c.routing.maxLagBlocks, 5);
  t.equal(c.routing.maxAttempts, 3);
  t.equal(c.routing.headPollMs, 1000);
  t.has(c.cache, { maxBytes: 134_217_728, finalityDepth: 64, redis: null });
  t.has(c.rateLimit, { perIp: { ratePerSec: 50, burst: 100 }, methodCost: { eth_getLogs: 10 }, redis: null });
  t.has(c.methods, { allow: [], deny: [], extensions: [] });
  t.has(c.subscriptions, { maxPerConnection: 100, maxConnectionsPerIp: 20 });
  t.has(c.log, { level: 'info' });
  t.equal(c.devnet, null);
});

t.test('a partly given section keeps the defaults of the rest', async (t) => {
  const c = parseConfigText(`server:\n  port: 0\n  cors: {}\nrateLimit:\n  perIp: null\n${MINIMAL}`, {});
  t.equal(c.server.port, 0);
  t.equal(c.server.maxBatchSize, 100);
  t.strictSame(c.server.cors, { origins: ['*'] });
  t.equal(c.rateLimit.perIp, null, 'perIp: null turns per-IP limiting off');
  t.equal(c.rateLimit.methodCost.eth_getLogs, 10);
});

t.test('chain id: YAML 0xba, "0xba" and 186 are all 186', async (t) => {
  t.equal(parseConfigText(`chainId: 0xba\n${MINIMAL}`, {}).chainId, 186);
  t.equal(parseConfigText(`chainId: "0xba"\n${MINIMAL}`, {}).chainId, 186);
  t.equal(parseConfigText(`chainId: "0xBA"\n${MINIMAL}`, {}).chainId, 186);
  t.equal(parseConfigText(`chainId: 186\n${MINIMAL}`, {}).chainId, 186);
  t.equal(validateConfig({ chainId: '0x1', upstreams: [{ name: 'a', url: 'http://x' }] }).chainId, 1);
  t.strictSame(
    problemsOf(() => parseConfigText(`chainId: 0\n${MINIMAL}`, {})),
    ['chainId: expected number to be >0, got 0'],
  );
  t.match(problemsOf(() => parseConfigText(`chainId: "ba"\n${MINIMAL}`, {}))[0], /^chainId: /);
});

t.test('the result is deeply frozen', async (t) => {
  const c = parseConfigText(
    `methods: { allow: [foo_bar] }\n${MINIMAL}  - name: b\n    url: http://127.0.0.1:8546\n    tags: [archive]\n`,
    {},
  );
  const all = [...walk(c)];
  t.ok(all.length > 20, 'walked the whole tree');
  for (const [path, v] of all) t.ok(Object.isFrozen(v), `${path} is frozen`);
  t.throws(() => {
    (c.server as { port: number }).port = 1;
  }, TypeError);
  t.throws(() => (c.upstreams[1]!.tags as string[]).push('debug'), TypeError);
  t.equal(c.server.port, 8545);
});

t.test('${NAME} is expanded from the env given; unset names are errors', async (t) => {
  const c = parseConfigText('upstreams:\n  - name: a\n    url: https://${HOST}/v1/${KEY}\n', {
    HOST: 'node.example',
    KEY: 's3cret',
  });
  t.equal(c.upstreams[0]!.url, 'https://node.example/v1/s3cret');
  t.strictSame(
    problemsOf(() => parseConfigText('upstreams:\n  - name: a\n    url: https://${HOST}/v1/${KEY}\n', { HOST: 'h' })),
    ['upstreams[0].url: environment variable KEY is not set'],
  );
  t.strictSame(
    problemsOf(() => parseConfigText('upstreams:\n  - name: a\n    url: ${EMPTYISH}\n', { EMPTYISH: '' })),
    ['upstreams[0].url: expected an http(s) URL, got ""'],
    'set but empty is not unset',
  );
});

t.test('validation problems name the key path, expected and got', async (t) => {
  t.strictSame(
    problemsOf(() =>
      validateConfig({
        upstreams: [
          { name: 'a', url: 'http://x' },
          { name: 'b', url: 'foo' },
        ],
      }),
    ),
    ['upstreams[1].url: expected an http(s) URL, got a value that is not a URL (not shown: it may hold credentials)'],
  );
  t.strictSame(
    problemsOf(() => validateConfig({ server: { port: 'x' }, upstreams: [{ name: 'a', url: 'http://x' }] })),
    ['server.port: expected number, got "x"'],
  );
  t.strictSame(
    problemsOf(() => validateConfig({ server: { port: 70000 }, upstreams: [{ name: 'a', url: 'http://x' }] })),
    ['server.port: expected number to be <=65535, got 70000'],
  );
  t.strictSame(
    problemsOf(() => validateConfig({ routing: { maxAttempts: 0 }, upstreams: [{ name: 'a', url: 'http://x' }] })),
    ['routing.maxAttempts: expected number to be >0, got 0'],
  );
  t.strictSame(
    problemsOf(() => validateConfig({ server: { prot: 1 }, upstreams: [{ name: 'a', url: 'http://x' }] })),
    ['server.prot: unknown option (did you mean port?)'],
  );
  t.strictSame(
    problemsOf(() => validateConfig({ upstreams: [{ name: 'a', url: 'http://x', ws: 'http://x' }] })),
    ['upstreams[0].ws: expected a ws(s) URL, got "http://x"'],
  );
  t.strictSame(
    problemsOf(() =>
      validateConfig({
        upstreams: [
          { name: 'a', url: 'http://x' },
          { name: 'a', url: 'http://y' },
        ],
      }),
    ),
    ['upstreams[1].name: expected a unique name, got duplicate "a"'],
  );
  t.strictSame(
    problemsOf(() => validateConfig({})),
    ['upstreams: expected array, got nothing'],
  );
  t.strictSame(
    problemsOf(() => parseConfigText('', {})),
    ['(root): expected a mapping of options'],
  );
  t.strictSame(
    problemsOf(() => parseConfigText('- a\n- b\n', {})),
    ['(root): expected a mapping of options'],
  );
  t.match(
    problemsOf(() => validateConfig({ upstreams: [{ name: 'a', url: 'http://x', tags: ['archive', 'turbo'] }] })),
    [/^upstreams\[0\]\.tags\[1\]: .*, got "turbo"$/],
  );
});

t.test('a value that may hold credentials is never quoted in a problem', async (t) => {
  const env = { SY_KEY: 'SUPERSECRETKEY123' };
  const up = '  - name: a\n    url: http://127.0.0.1:8545\n';
  const cases: [yaml: string, problem: string][] = [
    [
      'upstreams:\n  - name: a\n    url: "htps://user:pw@node.example/${SY_KEY}"\n',
      'upstreams[0].url: expected an http(s) URL, got "htps://***@node.example/***"',
    ],
    [
      'upstreams:\n  - name: a\n    url: "${SY_KEY}"\n',
      'upstreams[0].url: expected an http(s) URL, got a value that is not a URL (not shown: it may hold credentials)',
    ],
    [
      `upstreams:\n${up}    ws: "http://user:pw@h/\${SY_KEY}"\n`,
      'upstreams[0].ws: expected a ws(s) URL, got "http://***@h/***"',
    ],
    [
      `redis: "redis:/:pw@h/\${SY_KEY}"\nupstreams:\n${up}`,
      'redis: expected a redis:// URL or null, got a value that is not a URL (not shown: it may hold credentials)',
    ],
    [
      `cache: { redis: "rediz://:\${SY_KEY}@h:6379" }\nupstreams:\n${up}`,
      'cache.redis: expected a redis:// URL or null, got "rediz://***@h:6379"',
    ],
    [
      `rateLimit: { redis: "\${SY_KEY}" }\nupstreams:\n${up}`,
      'rateLimit.redis: expected a redis:// URL or null, got a value that is not a URL (not shown: it may hold credentials)',
    ],
    [
      `rateLimit: { apiKeys: [{ name: p, key: "SECRET", ratePerSec: 1, burst: 1 }] }\nupstreams:\n${up}`,
      'rateLimit.apiKeys[0].key: expected a key of at least 16 characters, got a value that is not shown (it is a secret)',
    ],
  ];
  for (const [yaml, problem] of cases) {
    const problems = problemsOf(() => parseConfigText(yaml, env));
    t.strictSame(problems, [problem]);
    for (const secret of ['SUPERSECRETKEY123', 'SECRET', 'pw'])
      t.notOk(problems.join('\n').includes(secret), `${problem.split(':')[0]}: ${secret} not shown`);
  }
});

t.test('a URL whose password holds / ? or # (so it does not parse) is masked up to its last @', async (t) => {
  const up = { name: 'a', url: 'http://127.0.0.1:8545' };
  const cases: [config: unknown, problem: string, secrets: string[]][] = [
    [
      { upstreams: [{ name: 'a', url: 'https://apikey:s3cr/t+tok@rpc.example.com/v1' }] },
      'upstreams[0].url: expected an http(s) URL, got "https://***@rpc.example.com/***"',
      ['apikey', 's3cr', 't+tok'],
    ],
    [
      { upstreams: [{ name: 'a', url: 'https://user:pa?ss@h' }] },
      'upstreams[0].url: expected an http(s) URL, got "https://***@h"',
      ['user', 'pa', 'ss@'],
    ],
    [
      { upstreams: [{ name: 'a', url: 'https://user:pw7#zq@h/x' }] },
      'upstreams[0].url: expected an http(s) URL, got "https://***@h/***"',
      ['user', 'pw7', 'zq'],
    ],
    [
      { upstreams: [{ ...up, ws: 'wss://apikey:s3cr/t+tok@h:8546/v1' }] },
      'upstreams[0].ws: expected a ws(s) URL, got "wss://***@h:8546/***"',
      ['apikey', 's3cr', 't+tok'],
    ],
    [
      { redis: 'redis://:pw7/zq@h:6379', upstreams: [up] },
      'redis: expected a redis:// URL or null, got "redis://***@h:6379"',
      ['pw7', 'zq'],
    ],
    [
      { cache: { redis: 'rediss://user:pw7?zq@h:6380/0' }, upstreams: [up] },
      'cache.redis: expected a redis:// URL or null, got "rediss://***@h:6380/***"',
      ['user', 'pw7', 'zq'],
    ],
  ];
  for (const [config, problem, secrets] of cases) {
    const problems = problemsOf(() => validateConfig(config));
    t.strictSame(problems, [problem]);
    for (const secret of secrets)
      t.notOk(problems.join('\n').includes(secret), `${problem.split(':')[0]}: ${secret} not shown`);
  }
});

t.test('a secret that is a letter or a word of the message leaves the key path and wording intact', async (t) => {
  const up = { name: 'a', url: 'http://127.0.0.1:8545' };
  const apiKey = (key: string): unknown => ({
    rateLimit: { apiKeys: [{ name: 'p', key, ratePerSec: 1, burst: 1 }] },
    upstreams: [up],
  });
  const keyProblem =
    'rateLimit.apiKeys[0].key: expected a key of at least 16 characters, got a value that is not shown (it is a secret)';
  t.strictSame(
    problemsOf(() => validateConfig(apiKey('s'))),
    [keyProblem],
  );
  t.strictSame(
    problemsOf(() => validateConfig(apiKey('expected'))),
    [keyProblem],
  );
  t.strictSame(
    problemsOf(() => validateConfig(apiKey('key'))),
    [keyProblem],
  );
  t.strictSame(
    problemsOf(() => validateConfig({ upstreams: [{ name: 'a', url: 'u' }] })),
    ['upstreams[0].url: expected an http(s) URL, got a value that is not a URL (not shown: it may hold credentials)'],
  );
  t.strictSame(
    problemsOf(() => validateConfig({ upstreams: [{ ...up, ws: 'a' }] })),
    ['upstreams[0].ws: expected a ws(s) URL, got a value that is not a URL (not shown: it may hold credentials)'],
  );
  t.strictSame(
    problemsOf(() => validateConfig({ redis: 'redis', upstreams: [up] })),
    ['redis: expected a redis:// URL or null, got a value that is not a URL (not shown: it may hold credentials)'],
  );
});

t.test('every problem of a file is reported, not just the first', async (t) => {
  const problems = problemsOf(() =>
    parseConfigText(
      'server: { prot: 1, port: "x" }\nrouting: { maxAttempts: 0 }\nupstreams:\n  - name: a\n    url: foo\n',
      {},
    ),
  );
  t.strictSame(problems.slice().sort(), [
    'routing.maxAttempts: expected number to be >0, got 0',
    'server.port: expected number, got "x"',
    'server.prot: unknown option',
    'upstreams[0].url: expected an http(s) URL, got a value that is not a URL (not shown: it may hold credentials)',
  ]);
});

t.test('config/example.yaml parses with NODE_B_KEY set, and without it', async (t) => {
  const text = readFileSync(new URL('../../config/example.yaml', import.meta.url), 'utf8');
  const c = parseConfigText(text, { NODE_B_KEY: 'key-b' });
  t.equal(c.chainId, 186);
  t.strictSame(
    c.upstreams.map((u) => [u.name, u.url, [...u.tags]]),
    [
      ['node-a', 'http://10.0.0.5:8545', []],
      ['node-b', 'https://node-b.example/key-b', ['archive', 'debug']],
      ['node-c', 'http://10.0.0.7:8545', []],
    ],
  );
  t.same(
    c.upstreams.map((u) => u.shadow),
    [false, false, true],
    'node-c is the shadow',
  );
  t.equal(c.upstreams[0]!.ws, 'ws://10.0.0.5:8546');
  // The example spells out every default: parsing it must give the same values as the defaults.
  const defaults = parseConfigText(MINIMAL, {});
  t.strictSame(c.server, defaults.server);
  t.strictSame(c.admin, defaults.admin);
  t.strictSame(c.routing, defaults.routing);
  t.strictSame(c.cache, defaults.cache);
  t.strictSame(c.rateLimit, defaults.rateLimit);
  t.strictSame(c.methods, defaults.methods);
  t.strictSame(c.subscriptions, defaults.subscriptions);
  t.strictSame(c.log, defaults.log);
  t.equal(
    parseConfigText(text, {}).upstreams[1]!.url,
    'https://node-b.example/',
    'NODE_B_KEY unset: the ${NODE_B_KEY:-} default, so the example passes as shipped',
  );
});

t.test("top-level redis is the default for cache.redis and rateLimit.redis; a section's own URL wins", async (t) => {
  t.has(
    parseConfigText(MINIMAL, {}),
    { redis: null, cache: { redis: null }, rateLimit: { redis: null } },
    'none by default',
  );
  const shared = parseConfigText(`${MINIMAL}redis: redis://shared:6379\n`, {});
  t.equal(shared.cache.redis, 'redis://shared:6379', 'cache inherits');
  t.equal(shared.rateLimit.redis, 'redis://shared:6379', 'rateLimit inherits');
  const own = parseConfigText(
    `${MINIMAL}redis: redis://shared:6379\ncache: { redis: "redis://cache:6379" }\nrateLimit: { redis: null }\n`,
    {},
  );
  t.equal(own.cache.redis, 'redis://cache:6379', "the section's own URL wins");
  t.equal(own.rateLimit.redis, 'redis://shared:6379', "the section's null inherits");
  t.match(
    problemsOf(() => parseConfigText(`${MINIMAL}redis: http://x\n`, {})),
    [/^redis: expected a redis:\/\/ URL/],
    'a bad URL names the key',
  );
});

t.test('SIGTERM defaults: delay + grace stay under the 30 s Kubernetes termination period', async (t) => {
  const c = parseConfigText(MINIMAL, {});
  t.equal(c.server.shutdownDelayMs, 5_000);
  t.equal(c.server.shutdownGraceMs, 20_000);
  t.ok(c.server.shutdownDelayMs + c.server.shutdownGraceMs < 30_000, 'headroom under 30 s');
});
