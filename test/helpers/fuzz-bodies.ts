/**
 * The HTTP fuzzer's generator of JSON-RPC bodies (broken JSON, deep nesting, huge numbers and
 * strings, invalid UTF-8, wrong types in every field, 10,000-element batches, mixed batches,
 * notifications), shared by every front that reads such bodies (HTTP, WebSocket frames).
 */
import fc from 'fast-check';

export const MAX_BATCH = 100;
export const MAX_BODY = 5 * 1024 * 1024;
export const MAX_DEPTH = 64;

export interface Input {
  kind: string;
  body: Buffer;
  contentType?: string;
}

export const enc = (s: string): Buffer => Buffer.from(s, 'utf8');
const q = (s: string): string => JSON.stringify(s);

/** Raw id texts, the awkward ones included: echoed byte for byte or refused. */
const idText = fc.oneof(
  fc.integer().map(String),
  fc.constantFrom(
    '0',
    '-0',
    '1.5',
    '1.50',
    '1e2',
    '1E+2',
    '-1e-7',
    '12345678901234567890',
    '1e400',
    '-1e400',
    '0.1000000000000000055511151231257827',
    'null',
    '"1"',
    '""',
    '"\\u0041\\n"',
    '"\\ud800"',
    '"é😀"',
  ),
  fc.string({ unit: 'binary', maxLength: 20 }).map(q),
  fc.bigInt({ min: -(10n ** 300n), max: 10n ** 300n }).map(String),
  // Not valid ids: -32600 with id null.
  fc.constantFrom('{}', '[]', '[1]', '{"a":1}', 'true', 'false'),
);
const METHODS = [
  'eth_chainId',
  'eth_blockNumber',
  'net_version',
  'net_listening',
  'web3_clientVersion',
  'web3_sha3',
  'eth_gasPrice',
  'eth_getBalance',
  'eth_getCode',
  'eth_getStorageAt',
  'eth_getTransactionCount',
  'eth_call',
  'eth_estimateGas',
  'eth_getBlockByNumber',
  'eth_getBlockByHash',
  'eth_getLogs',
  'eth_feeHistory',
  'eth_getTransactionReceipt',
  'eth_getTransactionByHash',
  'eth_sendRawTransaction',
  'eth_newFilter',
  'eth_getFilterChanges',
  'eth_uninstallFilter',
  'eth_subscribe',
  'debug_traceCall',
  'admin_peers',
  'anvil_mine',
  'evm_mine',
  'eth_sendTransaction',
  'eth_sign',
  'personal_sign',
  '__proto__',
  'constructor',
];
const methodText = fc.oneof(
  { arbitrary: fc.constantFrom(...METHODS).map(q), weight: 8 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 30 }).map(q), weight: 2 },
  // Wrong types.
  { arbitrary: fc.constantFrom('1', 'null', 'true', '[]', '{}', '""', '["eth_chainId"]'), weight: 1 },
);
const hexish = fc.oneof(
  fc.constantFrom(
    '"latest"',
    '"pending"',
    '"earliest"',
    '"finalized"',
    '"safe"',
    '"0x0"',
    '"0x1"',
    '"0xffffffffffffffffffff"',
    '"0x"',
    '"0xzz"',
    '"-0x1"',
    '1e400',
    '-1',
    '0',
  ),
  fc.bigInt({ min: 0n, max: 2n ** 80n }).map((n) => q(`0x${n.toString(16)}`)),
  fc.constantFrom(
    '"0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"',
    '"0x0000000000000000000000000000000000000000"',
    `"0x${'ab'.repeat(32)}"`,
  ),
);
const jsonText = fc.json({ maxDepth: 4 });
const paramsText = fc.oneof(
  { arbitrary: fc.array(fc.oneof(hexish, jsonText), { maxLength: 4 }).map((a) => `[${a.join(',')}]`), weight: 6 },
  { arbitrary: fc.constant('[]'), weight: 2 },
  {
    arbitrary: fc.constantFrom(
      '[{"fromBlock":"0x0","toBlock":"latest"}]',
      '[{"blockHash":"0x00"}]',
      '[{"to":"0x0000000000000000000000000000000000000000","data":"0x"},"latest"]',
      '[["latest"]]',
      '[{"a":{"b":{"c":[1,2,3]}}}]',
    ),
    weight: 2,
  },
  // Not arrays: -32602.
  { arbitrary: fc.constantFrom('{}', '{"0":"latest"}', '"latest"', '1', 'null', 'true'), weight: 1 },
);
const jsonrpcText = fc.oneof(
  { arbitrary: fc.constant('"2.0"'), weight: 10 },
  { arbitrary: fc.constantFrom('2.0', '2', '"2"', '"1.0"', 'null', '"2.0 "', '["2.0"]'), weight: 1 },
);

/** A request object, with any member possibly missing or mistyped, members in any order. */
const element = fc
  .record(
    {
      jsonrpc: jsonrpcText,
      id: idText,
      method: methodText,
      params: paramsText,
      extra: fc.constantFrom('"x"', '1', 'null'),
    },
    { requiredKeys: [] },
  )
  .chain((r) => fc.shuffledSubarray(Object.entries(r), { minLength: Object.keys(r).length }))
  .map((members) => `{${members.map(([k, v]) => `${q(k)}:${v}`).join(',')}}`);
const goodCall = fc
  .record({
    id: fc.option(
      idText.filter((x) => !/^[[{tf]/.test(x)),
      { nil: undefined, freq: 4 },
    ),
    method: fc.constantFrom(...METHODS.slice(0, 20)),
    params: paramsText,
  })
  .map(
    ({ id, method, params }) =>
      `{"jsonrpc":"2.0",${id === undefined ? '' : `"id":${id},`}"method":${q(method)},"params":${params}}`,
  );
const anyElement = fc.oneof(
  { arbitrary: goodCall, weight: 4 },
  { arbitrary: element, weight: 4 },
  { arbitrary: jsonText, weight: 1 },
);
const batchText = (max: number) => fc.array(anyElement, { maxLength: max }).map((a) => `[${a.join(',')}]`);

const nested = (depth: number, open: string, close: string, inner = '1'): string =>
  open.repeat(depth) + inner + close.repeat(depth);

export const shapes: fc.Arbitrary<Input>[] = [
  goodCall.map((s) => ({ kind: 'valid call', body: enc(s) })),
  element.map((s) => ({ kind: 'wrong types', body: enc(s) })),
  batchText(20).map((s) => ({ kind: 'mixed batch', body: enc(s) })),
  batchText(MAX_BATCH + 10).map((s) => ({ kind: 'batch near the cap', body: enc(s) })),
  fc
    .array(
      goodCall.filter((c) => !c.includes('"id"')),
      { minLength: 1, maxLength: 10 },
    )
    .map((a) => ({ kind: 'notifications only', body: enc(`[${a.join(',')}]`) })),
  fc.jsonValue().map((v) => ({ kind: 'any JSON', body: enc(JSON.stringify(v) ?? 'null') })),
  // Broken JSON: a valid body cut short, a byte replaced, garbage, JSON5-isms.
  fc
    .tuple(batchText(5), fc.nat())
    .map(([s, n]) => ({ kind: 'truncated', body: enc(s.slice(0, n % Math.max(1, s.length))) })),
  fc
    .tuple(goodCall, fc.nat(), fc.constantFrom('{', '}', '[', ']', ',', ':', '"', '\\', "'", ' ', '\u0000', '\n'))
    .map(([s, n, c]) => {
      const k = n % s.length;
      return { kind: 'one byte changed', body: enc(s.slice(0, k) + c + s.slice(k + 1)) };
    }),
  fc.string({ unit: 'binary', maxLength: 200 }).map((s) => ({ kind: 'random text', body: enc(s) })),
  fc
    .constantFrom(
      '',
      ' ',
      'null',
      'true',
      '1',
      '"x"',
      '[]',
      '[ ]',
      '{}',
      '[[]]',
      '[{}]',
      '[1,2,3]',
      '[null]',
      '{"jsonrpc":"2.0","method":"eth_chainId","id":1,}',
      "{'jsonrpc':'2.0'}",
      '{"id":1/*c*/}',
      'NaN',
      '[Infinity]',
      '{"id":01}',
      '{"id":+1}',
      '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}garbage',
      '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}{"jsonrpc":"2.0","id":2,"method":"eth_chainId"}',
      '{"jsonrpc":"2.0","id":1,"id":{},"method":"eth_chainId"}',
      '{"jsonrpc":"2.0","id":{},"id":1,"method":"eth_chainId"}',
      '{"__proto__":{"id":1},"jsonrpc":"2.0","method":"eth_chainId"}',
    )
    .map((s) => ({ kind: 'edge text', body: enc(s) })),
  fc.uint8Array({ maxLength: 300 }).map((b) => ({ kind: 'random bytes', body: Buffer.from(b) })),
  // Invalid UTF-8 inside an otherwise valid request.
  fc
    .tuple(
      goodCall,
      fc.nat(),
      fc.constantFrom(
        [0xff],
        [0xc0, 0x80],
        [0x80],
        [0xe2, 0x82],
        [0xed, 0xa0, 0x80],
        [0xf4, 0x90, 0x80, 0x80],
        [0xfe, 0xff],
      ),
    )
    .map(([s, n, bad]) => {
      const b = enc(s);
      const k = n % b.length;
      return { kind: 'invalid UTF-8', body: Buffer.concat([b.subarray(0, k), Buffer.from(bad), b.subarray(k)]) };
    }),
  goodCall.map((s) => ({ kind: 'BOM', body: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), enc(s)]) })),
  // Deep nesting, as the body and inside params.
  fc.constantFrom(MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, 100, 10_000, 100_000).chain((d) =>
    fc.constantFrom(
      { kind: `nested ${d} arrays`, body: enc(nested(d, '[', ']')) },
      { kind: `nested ${d} objects`, body: enc(nested(d, '{"a":', '}')) },
      {
        kind: `params nested ${d}`,
        body: enc(
          `{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":${nested(Math.max(1, d - 1), '[', ']', '"latest"')}}`,
        ),
      },
      { kind: `nested ${d}, unclosed`, body: enc('['.repeat(d)) },
    ),
  ),
  // Huge numbers.
  fc
    .constantFrom(
      '1e400',
      '-1e400',
      '1'.repeat(300),
      `0.${'0'.repeat(500)}1`,
      `1${'0'.repeat(5000)}`,
      '123456789012345678901234567890e-999999',
    )
    .chain((n) =>
      fc.constantFrom(
        { kind: 'huge number id', body: enc(`{"jsonrpc":"2.0","id":${n},"method":"eth_chainId"}`) },
        {
          kind: 'huge number param',
          body: enc(
            `{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0x0000000000000000000000000000000000000000",${n}]}`,
          ),
        },
        {
          kind: 'huge number param',
          body: enc(`{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":[${n},false]}`),
        },
        { kind: 'huge number method', body: enc(`{"jsonrpc":"2.0","id":1,"method":${n}}`) },
      ),
    ),
  // Huge strings.
  fc.constantFrom(1_000, 100_000, 1_000_000).chain((n) =>
    fc.constantFrom(
      { kind: 'huge method', body: enc(`{"jsonrpc":"2.0","id":1,"method":${q('eth_'.padEnd(n, 'x'))}}`) },
      { kind: 'huge id', body: enc(`{"jsonrpc":"2.0","id":${q('i'.repeat(n))},"method":"eth_chainId"}`) },
      {
        kind: 'huge param',
        body: enc(`{"jsonrpc":"2.0","id":1,"method":"web3_sha3","params":[${q(`0x${'ab'.repeat(n / 2)}`)}]}`),
      },
      {
        kind: 'huge param',
        body: enc(
          `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":"0x0000000000000000000000000000000000000000","data":${q(`0x${'00'.repeat(n / 2)}`)}},"latest"]}`,
        ),
      },
    ),
  ),
  // 10,000-element batches: valid calls, garbage, notifications.
  fc
    .constantFrom(
      '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}',
      '{"jsonrpc":"2.0","method":"eth_chainId"}',
      '1',
      '{}',
    )
    .map((el) => ({ kind: '10,000-element batch', body: enc(`[${Array(10_000).fill(el).join(',')}]`) })),
  // Over maxBodyBytes (rare: each is 5 MiB).
  fc.constant({
    kind: 'body over 5 MiB',
    body: enc(`{"jsonrpc":"2.0","id":1,"method":"web3_sha3","params":["0x${'a'.repeat(MAX_BODY)}"]}`),
  }),
];
export const WEIGHTS = [10, 10, 10, 3, 3, 4, 4, 4, 3, 3, 3, 3, 1, 2, 2, 2, 1, 0.05];

/** One body of any shape, weighted as the HTTP fuzzer weighs them. */
export const bodies: fc.Arbitrary<Input> = fc.oneof(
  ...shapes.map((arbitrary, i) => ({ arbitrary, weight: Math.max(1, Math.round(WEIGHTS[i]! * 20)) })),
);
