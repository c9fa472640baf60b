import t from 'tap';
import { arrayElements, balancedEnd, elementSpan, nestingDepthExceeds, objectMembers } from '../../src/jsonrpc/scan.js';

t.test('array elements keep their exact source text', async (t) => {
  const text = ' [ 1 , "a,]" , {"x":[1,2]} ,null,12345678901234567890 ] ';
  const spans = arrayElements(text).map((s) => text.slice(s.start, s.end));
  t.same(spans, ['1', '"a,]"', '{"x":[1,2]}', 'null', '12345678901234567890']);
  const one = (i: number) => {
    const s = elementSpan(text, i);
    return s === undefined ? undefined : text.slice(s.start, s.end);
  };
  t.same([0, 1, 2, 3, 4].map(one), spans, 'elementSpan finds each element alone');
  t.equal(one(5), undefined, 'past the end');
  t.equal(elementSpan('[]', 0), undefined, 'empty array');
  t.equal(elementSpan('{"a":1}', 0), undefined, 'not an array');
});

t.test('object members: last duplicate wins, escaped keys are decoded', async (t) => {
  const text = '{"id":1,"method":"m","\\u0069d":  1.50 ,"params":[{"a":"}"}]}';
  const m = objectMembers(text, { start: 0, end: text.length }, ['id', 'params']);
  t.equal(text.slice(m.get('id')!.start, m.get('id')!.end), '1.50');
  t.equal(text.slice(m.get('params')!.start, m.get('params')!.end), '[{"a":"}"}]');
});

t.test('nesting depth ignores brackets inside strings', async (t) => {
  t.equal(nestingDepthExceeds('[[["[[[[[[["]]]', 3), false);
  t.equal(nestingDepthExceeds('[[[[]]]]', 3), true);
});

t.test('strings with escaped quotes and backslashes end where JSON says', async (t) => {
  const text = '["a\\\\", "b\\"]", "c\\\\\\"d", {"k\\"":"\\\\"}, 1]';
  const spans = arrayElements(text).map((s) => text.slice(s.start, s.end));
  t.same(
    spans.map((s) => JSON.parse(s) as unknown),
    JSON.parse(text),
  );
  t.equal(nestingDepthExceeds(`${'['.repeat(70)}"${']'.repeat(70)}"${']'.repeat(70)}`, 64), true);
  t.equal(nestingDepthExceeds(`["${'['.repeat(200)}\\\\"]`, 64), false);
});

t.test('balancedEnd: past the closing bracket, or -1 when the text ends first', async (t) => {
  t.equal(balancedEnd('[1,["]"],{"a":"}"}] x', 0), 19);
  t.equal(balancedEnd('{{}', 0), -1, 'a closing bracket at the very end is not enough');
  t.equal(balancedEnd('["\\"]"', 0), -1, 'an escaped quote does not end the string');
});
