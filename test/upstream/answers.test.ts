/**
 * Reading a node's answer (upstream/answers.ts): the raw text of each result, exactly as the node
 * wrote it, whether the answer has the common compact shape (read by a fast path) or any other
 * valid shape (member order, whitespace, extra members, a trailing newline), alone or in a batch.
 */
import t from 'tap';
import { classifyBatch, classifyBatchInOrder, classifyHttp } from '../../src/upstream/answers.js';
import type { Verdict } from '../../src/upstream/classify.js';

const MISSING: Verdict = { kind: 'retry', reason: 'bad_body', health: true };

const result = (v: Verdict): string | undefined => (v.kind === 'result' ? String(v.result) : undefined);

const singles: [string, string, string | undefined][] = [
  ['compact', '{"jsonrpc":"2.0","id":1,"result":"0x1"}', '"0x1"'],
  ['trailing newline (geth)', '{"jsonrpc":"2.0","id":1,"result":"0x1"}\n', '"0x1"'],
  ['negative id', '{"jsonrpc":"2.0","id":-7,"result":true}', 'true'],
  ['object result', '{"jsonrpc":"2.0","id":1,"result":{"a":[1,{"b":"}"}],"c":null}}', '{"a":[1,{"b":"}"}],"c":null}'],
  ['null result', '{"jsonrpc":"2.0","id":1,"result":null}', 'null'],
  ['string with an escaped quote', '{"jsonrpc":"2.0","id":1,"result":"a\\"b"}', '"a\\"b"'],
  ['a member after the result', '{"jsonrpc":"2.0","id":1,"result":"0x2","extra":{"x":1}}', '"0x2"'],
  ['other member order', '{"id":1,"result":"0x3","jsonrpc":"2.0"}', '"0x3"'],
  ['spaces', '{ "jsonrpc": "2.0", "id": 1, "result": [ 1, 2 ] }', '[ 1, 2 ]'],
  ['string id', '{"jsonrpc":"2.0","id":"x","result":"0x4"}', '"0x4"'],
  ['result and a null error', '{"jsonrpc":"2.0","id":1,"result":"0x5","error":null}', '"0x5"'],
];

t.test('single answers: the result text as the node wrote it', async (t) => {
  for (const [name, body, want] of singles) t.equal(result(classifyHttp(200, body)), want, name);
});

/** The value a result verdict carries (answers.ts hands verification the parse it made), or 'none'. */
const parsedValue = (v: Verdict): unknown => (v.kind === 'result' && 'value' in v ? v.value : 'none');

t.test(
  'an object or array result comes with the value its answer was parsed into, the same as its text parsed',
  async (t) => {
    const shapes: [string, string][] = [
      ...singles,
      [
        'a repeated result member (JSON.parse keeps the last)',
        '{"jsonrpc":"2.0","id":1,"result":{"a":1},"result":{"b":2}}',
      ],
      ['a repeated result member, spaced', '{ "jsonrpc": "2.0", "id": 1, "result": [1], "result" : [2] }'],
      ['an escaped result key', '{"jsonrpc":"2.0","id":1,"result":{"a":1},"res\\u0075lt":{"b":2}}'],
    ].map(([name, body]) => [name, body] as [string, string]);
    for (const [name, body] of shapes) {
      const v = classifyHttp(200, body);
      const text = result(v);
      if (text === undefined) {
        t.fail(`${name}: no result`);
        continue;
      }
      const parsed = JSON.parse(text) as unknown;
      if (typeof parsed === 'object' && parsed !== null) t.same(parsedValue(v), parsed, `${name}: alone`);
      else
        t.equal(
          parsedValue(v),
          'none',
          `${name}: alone, a ${parsed === null ? 'null' : typeof parsed} carries no value`,
        );
    }
    const repeated = classifyHttp(200, '{"jsonrpc":"2.0","id":1,"result":{"a":1},"result":{"b":2}}');
    t.equal(result(repeated), '{"b":2}', 'the text served is the member JSON.parse kept');
    const batch = `[${shapes.map(([, b], i) => b.replace(/"id":\s*("x"|-?\d+)/, `"id":${i + 1}`)).join(',')}]`;
    const read = classifyBatch(200, batch) as Map<number, Verdict>;
    shapes.forEach(([name], i) => {
      const v = read.get(i + 1)!;
      const text = result(v);
      const parsed = text === undefined ? undefined : (JSON.parse(text) as unknown);
      if (typeof parsed === 'object' && parsed !== null) t.same(parsedValue(v), parsed, `${name}: in a batch`);
      else t.equal(parsedValue(v), 'none', `${name}: in a batch, no value`);
    });
  },
);

t.test('an error answer is a node error, never a result', async (t) => {
  const v = classifyHttp(200, '{"jsonrpc":"2.0","id":1,"error":{"code":3,"message":"execution reverted","data":"0x"}}');
  t.equal(v.kind, 'node-error');
  t.equal(v.kind === 'node-error' && v.error, '{"code":3,"message":"execution reverted","data":"0x"}');
});

t.test('a batch answer: each result by its id, whatever the shape of each element', async (t) => {
  const body = `[${singles
    .filter(([name]) => name !== 'string id' && name !== 'trailing newline (geth)')
    .map(([, b], i) => b.replace(/"id":\s*-?\d+/, `"id":${i + 1}`))
    .join(' , ')}]`;
  const verdicts = classifyBatch(200, body);
  t.ok(verdicts instanceof Map);
  const wanted = singles.filter(([name]) => name !== 'string id' && name !== 'trailing newline (geth)');
  wanted.forEach(([name, , want], i) => t.equal(result((verdicts as Map<number, Verdict>).get(i + 1)!), want, name));
});

t.test(
  'a batch of plain answers is read without JSON.parse, and only text JSON.parse accepts gets through',
  async (t) => {
    const plain =
      '[{"jsonrpc":"2.0","id":1,"result":"0x1"},{"jsonrpc":"2.0","id":2,"result":true},{"jsonrpc":"2.0","id":3,"result":null},{"jsonrpc":"2.0","id":4,"result":false}]';
    for (const [name, body] of [
      ['compact', plain],
      ['trailing newline (geth)', `${plain}\n`],
    ] as const) {
      const read = classifyBatch(200, body) as Map<number, Verdict>;
      t.same(
        [1, 2, 3, 4].map((id) => result(read.get(id)!)),
        ['"0x1"', 'true', 'null', 'false'],
        name,
      );
    }
    const parse = JSON.parse;
    let parsed = 0;
    JSON.parse = ((text: string) => (parsed++, parse(text))) as typeof JSON.parse;
    try {
      classifyBatch(200, plain);
      classifyBatchInOrder(200, plain, 1, 4, MISSING);
      t.equal(parsed, 0, 'plain answers are not given to JSON.parse');
      classifyBatch(200, plain.replace('"0x1"', '{"a":1}'));
      t.equal(parsed, 1, 'an object result is');
    } finally {
      JSON.parse = parse;
    }
    const inOrder = classifyBatchInOrder(200, plain.replace('"id":2', '"id":9'), 1, 3, MISSING) as Verdict[];
    t.same(
      inOrder.map(result),
      ['"0x1"', undefined, 'null'],
      'ids out of range are left out, a missing one is marked missing',
    );
    // Text a node may send that is not JSON: the plain reading must not take it.
    for (const [name, body] of [
      ['a control character inside a result', plain.replace('"0x1"', '"0x\u00011"')],
      ['an id with a leading zero', plain.replace('"id":1,', '"id":01,')],
      ['no closing bracket', plain.slice(0, -1)],
      ['text after the array', `${plain}x`],
      ['a missing comma', plain.replace('},{', '}{')],
      ['a truncated literal', plain.replace('true', 'tru')],
    ] as const) {
      t.same(classifyBatch(200, body), { kind: 'retry', reason: 'bad_body', health: true }, name);
    }
    // Valid shapes the plain reading leaves to JSON.parse, read exactly as the node wrote them.
    const escaped = '[{"jsonrpc":"2.0","id":1,"result":"a\\"b"},{"jsonrpc":"2.0","id":2,"result":"0x2"}]';
    t.same(
      [1, 2].map((id) => result((classifyBatch(200, escaped) as Map<number, Verdict>).get(id)!)),
      ['"a\\"b"', '"0x2"'],
      'an escaped quote',
    );
    const mixed =
      '[{"jsonrpc":"2.0","id":1,"result":"0x1"},{"jsonrpc":"2.0","id":2,"result":{"a":"}"}},{"jsonrpc":"2.0","id":3,"error":{"code":3,"message":"x"}}]';
    const m = classifyBatch(200, mixed) as Map<number, Verdict>;
    t.same(
      [result(m.get(1)!), result(m.get(2)!), m.get(3)!.kind],
      ['"0x1"', '{"a":"}"}', 'node-error'],
      'an object result and an error among plain answers',
    );
    t.same(
      classifyBatchInOrder(503, plain, 1, 4, MISSING),
      { kind: 'retry', reason: 'http_5xx', health: true },
      'a 5xx is a failure whatever its body',
    );
  },
);

t.test('a body that is no answer is named by its status: 404, another 4xx, 200, the rest', async (t) => {
  const page = '<html><body>Not Found</body></html>';
  t.same(classifyHttp(404, page), { kind: 'retry', reason: 'http_404', health: true }, 'a 404: its own reason');
  t.same(classifyHttp(403, page), { kind: 'retry', reason: 'http_4xx', health: true }, 'a 403');
  t.same(classifyHttp(200, page), { kind: 'retry', reason: 'bad_body', health: true }, 'a 200');
  t.same(classifyHttp(302, page), { kind: 'retry', reason: 'http_other', health: true }, 'a redirect');
  t.same(classifyHttp(429, page), { kind: 'retry', reason: 'http_429', health: false, holdOff: true }, '429 as before');
});
