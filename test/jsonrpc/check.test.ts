// The piecewise JSON checker (src/jsonrpc/check.ts) agrees with JSON.parse on what is JSON, however
// the text is cut into pieces, and finds the spans of id/result/error in an answer and in each
// element of a batch answer.
import fc from 'fast-check';
import t from 'tap';
import { JsonChecker, type Checked } from '../../src/jsonrpc/check.js';

function check(text: string, cuts: number[]): Checked | null {
  const c = new JsonChecker();
  let last = 0;
  for (const k of [...cuts.filter((x) => x > 0 && x < text.length).sort((a, b) => a - b), text.length]) {
    if (!c.push(text.slice(last, k))) return null;
    last = k;
  }
  return c.end();
}

function parses(s: string): boolean {
  try {
    JSON.parse(s);
    return true;
  } catch {
    return false;
  }
}

t.test('valid and invalid texts, cut anywhere', async (t) => {
  const samples = [
    '{"jsonrpc":"2.0","id":1,"result":[1,2,{"a":"b"}]}',
    '[{"id":1,"result":"0x1"},{"id":2,"error":{"code":-1,"message":"x"}}]',
    ' 12 ',
    '{"re\\u0073ult":true}',
    '[]',
    '{}',
    '"a\\"b"',
    '1e5',
    '-0.5E+3',
    'tru',
    '[1,]',
    '{"a":1,}',
    '01',
    '[1 2]',
    '{"a" 1}',
    '"\\x"',
    '"a\u0001"',
    '[',
    ']',
    '{"a":[}',
    'nul',
    ' ',
    '',
    '1.',
    '-',
    '[-]',
    '{"id":12345678901234567890,"result":null}\n',
    '\ufeff1',
  ];
  for (const s of samples) {
    let same = true;
    for (let k = 0; k <= s.length && same; k++) same = (check(s, [k, k + 1, k + 3]) !== null) === parses(s);
    t.ok(same, JSON.stringify(s));
  }
});

t.test('property: agrees with JSON.parse', async (t) => {
  fc.assert(
    fc.property(fc.json(), fc.array(fc.nat(200)), (j, cuts) => check(j, cuts) !== null),
    { numRuns: 2000 },
  );
  const unit = fc.constantFrom(...'{}[]":,0123456789-.eEtrufalsn \\u'.split(''));
  fc.assert(
    fc.property(
      fc.string({ unit, maxLength: 30 }),
      fc.array(fc.nat(30)),
      (s, cuts) => (check(s, cuts) !== null) === parses(s),
    ),
    { numRuns: 20000 },
  );
  t.pass('20,000 texts of JSON characters and 2,000 JSON values');
});

t.test('spans of an answer and of a batch answer', async (t) => {
  const one = '{"jsonrpc":"2.0","id":7,"result":[1,{"x":2}], "error" : {"code":1}}';
  const a = check(one, [5, 40]);
  t.equal(a?.kind, 'object');
  if (a?.kind === 'object')
    t.same(Object.fromEntries([...a.members].map(([k, v]) => [k, one.slice(v.start, v.end)])), {
      id: '7',
      result: '[1,{"x":2}]',
      error: '{"code":1}',
    });
  const batch = '[{"id":1,"result":"0x1"} , {"error":{"code":-1},"id":2}, 5]';
  const b = check(batch, [3, 17, 30]);
  t.equal(b?.kind, 'array');
  if (b?.kind === 'array') {
    t.same(
      b.elements.map((e) => [
        batch.slice(e.span.start, e.span.end),
        Object.fromEntries([...e.members].map(([k, v]) => [k, batch.slice(v.start, v.end)])),
      ]),
      [
        ['{"id":1,"result":"0x1"}', { id: '1', result: '"0x1"' }],
        ['{"error":{"code":-1},"id":2}', { error: '{"code":-1}', id: '2' }],
        ['5', {}],
      ],
    );
  }
  const escaped = check('{"re\\u0073ult":"x"}', [6]);
  t.ok(escaped?.kind === 'object' && escaped.members.has('result'), 'an escaped key is read as JSON.parse reads it');
  t.equal(check(`${'['.repeat(2000)}${']'.repeat(2000)}`, []), null, 'nesting deeper than 1024: refused');
  t.equal(check(`[${'1'.repeat(300)}]`, [100]), null, 'a 300-digit number: refused');
});
