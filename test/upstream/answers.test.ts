/**
 * Reading a node's answer (upstream/classify.ts): the raw text of each result, exactly as the node
 * wrote it, whether the answer has the common compact shape (read by a fast path) or any other
 * valid shape (member order, whitespace, extra members, a trailing newline), alone or in a batch.
 */
import t from 'tap';
import { classifyBatch, classifyHttp, type Verdict } from '../../src/upstream/classify.js';

const result = (v: Verdict): string | undefined => (v.kind === 'result' ? v.result : undefined);

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
