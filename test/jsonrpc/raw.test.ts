// Text kept as bytes (a large node result): joined into answers, batches and merged eth_getLogs
// chunks beside other text, never copied; what comes out is exactly the JSON a string would make.
import t from 'tap';
import { arrayInside, joinRaw, RawText } from '../../src/jsonrpc/raw.js';
import { responseText, writeBody } from '../../src/jsonrpc/response.js';
import { mergeLogs } from '../../src/pipeline/logs.js';

/** A RawText of `text`, cut into pieces of `size` bytes (as a large answer arrives). */
function raw(text: string, size = 7): RawText {
  const bytes = Buffer.from(text);
  const chunks: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.subarray(i, i + size));
  return new RawText(chunks, bytes.length, text.length);
}

const LOGS = '[{"a":"é😀"},{"b":2},{"c":[1,2,3]}]';

t.test('an answer and a batch around bytes: the same text, the bytes not copied', async (t) => {
  const r = raw(LOGS);
  const one = responseText('7', { result: r });
  t.type(one, RawText);
  t.equal(String(one), `{"jsonrpc":"2.0","id":7,"result":${LOGS}}`);
  t.equal((one as RawText).byteLength, Buffer.byteLength(String(one)));
  t.equal((one as RawText).length, String(one).length);
  t.ok(
    r.chunks.every((c) => (one as RawText).chunks.includes(c)),
    "the result's own Buffers are in the answer",
  );
  const batch = writeBody(true, [one, undefined, '{"jsonrpc":"2.0","id":8,"result":"0x1"}']);
  t.same(JSON.parse(String(batch)), [
    { jsonrpc: '2.0', id: 7, result: JSON.parse(LOGS) },
    { jsonrpc: '2.0', id: 8, result: '0x1' },
  ]);
  t.equal(writeBody(true, ['{"a":1}', '{"b":2}']), '[{"a":1},{"b":2}]', 'strings alone stay a string');
});

t.test('arrayInside: the elements of an array, or null for anything else', async (t) => {
  t.equal(String(arrayInside(raw(LOGS, 1))), LOGS.slice(1, -1));
  t.equal(String(arrayInside(raw('[1]', 1))), '1');
  t.equal(arrayInside(raw('{"a":1}')), null);
  t.ok(arrayInside(raw('[  ]'))!.isBlank());
  t.notOk(arrayInside(raw(LOGS))!.isBlank());
});

t.test('mergeLogs with chunks as bytes and as text: one array, in order', async (t) => {
  const merged = mergeLogs([
    { result: raw(LOGS) },
    { result: '[]' },
    { result: raw('[ \n ]') },
    { result: ' [{"d":4}] ' },
    { result: raw('[{"e":5}]', 3) },
  ]);
  t.type(merged.result, RawText);
  t.same(JSON.parse(String(merged.result)), [...JSON.parse(LOGS), { d: 4 }, { e: 5 }]);
  t.match(mergeLogs([{ result: raw(LOGS) }, { result: raw('{"x":1}') }]), { error: { reason: 'UPSTREAM_FAILED' } });
  t.equal(mergeLogs([{ result: '[1]' }, { result: '[2]' }]).result, '[1,2]', 'text chunks stay text');
  t.equal(String(joinRaw(['[', raw('1,2'), ']'])), '[1,2]');
});
