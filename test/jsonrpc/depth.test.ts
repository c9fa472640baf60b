// The nesting-depth rule (SPEC 3.1): each request object may nest 64 levels, counted from itself;
// a deeper one gets -32600 in its own slot with its own id, and the rest of a batch goes on.
import t from 'tap';
import { DEPTH_PRESCAN_MIN_LENGTH, MAX_NESTING, parseBody, type Slot } from '../../src/jsonrpc/parse.js';

const deep = (n: number, inner = '1'): string => '['.repeat(n) + inner + ']'.repeat(n);
const request = (id: string, params: string): string =>
  `{"jsonrpc":"2.0","id":${id},"method":"eth_call","params":${params}}`;

/** Each slot with the id its answer will carry (a call's own id, or the id decided for an error). */
function slots(text: string): (Slot & { id?: string })[] {
  const parsed = parseBody(text, 100);
  if (parsed.kind !== 'calls') throw new Error(`expected calls, got the whole-body error ${parsed.error.reason}`);
  return parsed.slots;
}

t.test('params nested 100,000 deep: -32600 with the request id kept', async (t) => {
  const [s] = slots(request('"abc"', deep(100_000)));
  t.equal(s?.error?.reason, 'TOO_DEEP');
  t.equal(s?.id, '"abc"', 'the id is readable, so it is echoed');
});

t.test('exactly at the limit is accepted; one more level is refused', async (t) => {
  // The request object is level 1 and params level 2: params may hold MAX_NESTING - 2 more levels.
  const [ok] = slots(request('1', deep(MAX_NESTING - 1)));
  t.ok(ok?.call, `${MAX_NESTING} levels is a call`);
  const [over] = slots(request('2', deep(MAX_NESTING)));
  t.equal(over?.error?.reason, 'TOO_DEEP', `${MAX_NESTING + 1} levels is refused`);
  t.equal(over?.id, '2');
});

/** The same request with its params before its id: not the compact shape, so read member by member. */
const loose = (id: string, params: string): string =>
  `{"jsonrpc":"2.0","method":"eth_call","params":${params},"id":${id}}`;

t.test('the limit is the same for a compact request (judged by its params) and any other', async (t) => {
  for (const [shape, make] of [
    ['compact', request],
    ['params before the id', loose],
  ] as const) {
    for (const inner of ['1', '', '"]]]]"']) {
      const [ok] = slots(make('1', deep(MAX_NESTING - 1, inner)));
      t.ok(ok?.call, `${shape}, ${JSON.stringify(inner)} inside: ${MAX_NESTING} levels is a call`);
      const [over] = slots(make('2', deep(MAX_NESTING, inner)));
      t.equal(over?.error?.reason, 'TOO_DEEP', `${shape}, ${JSON.stringify(inner)} inside: one more is refused`);
    }
  }
  // Long shallow params (a block hash, a long calldata) are no nesting.
  const [hash] = slots(request('3', `["0x${'ab'.repeat(32)}",false]`));
  t.ok(hash?.call, 'a call with a block hash is a call');
  const [data] = slots(request('4', `[{"to":"0x${'11'.repeat(20)}","data":"0x${'[{'.repeat(200)}"},"latest"]`));
  t.ok(data?.call, 'brackets inside a string are no nesting');
});

t.test('the batch array does not count toward a call depth', async (t) => {
  const batch = slots(`[${request('1', deep(MAX_NESTING - 1))}]`);
  t.ok(batch[0]?.call, 'a call at the limit inside a batch is still a call');
});

t.test('a batch with one too-deep call: that slot refused, the others go on, in order', async (t) => {
  const s = slots(`[${request('1', '[]')},${request('2', deep(10_000))},${request('3', '[]')}]`);
  t.equal(s.length, 3);
  t.ok(s[0]?.call);
  t.equal(s[1]?.error?.reason, 'TOO_DEEP');
  t.equal(s[1]?.id, '2');
  t.ok(s[2]?.call);
});

t.test('[[[[...]]]] 100,000 deep: a batch answer, one -32600 per element', async (t) => {
  const s = slots(deep(100_000, ''));
  t.equal(s.length, 1);
  t.equal(s[0]?.error?.reason, 'INVALID_REQUEST');
  t.equal(s[0]?.id, 'null');
});

t.test('an object id nested deep is no id: -32600 with id null', async (t) => {
  const [s] = slots(`{"jsonrpc":"2.0","id":${'{"a":'.repeat(1000)}1${'}'.repeat(1000)},"method":"eth_call"}`);
  t.equal(s?.id, 'null');
  t.equal(s?.error?.code, -32600);
});

t.test('broken JSON is -32700 at any depth', async (t) => {
  const parsed = parseBody('['.repeat(100_000), 100);
  t.equal(parsed.kind, 'error');
  if (parsed.kind === 'error') t.equal(parsed.error.code, -32700);
});

// Long bodies are scanned for depth before JSON.parse (which would build every level first).

/** Runs fn with JSON.parse recording each text it is given. */
function parsedTexts<T>(fn: () => T): { result: T; texts: string[] } {
  const texts: string[] = [];
  const real = JSON.parse;
  JSON.parse = ((text: string, reviver?: Parameters<typeof JSON.parse>[1]) => {
    texts.push(text);
    return real(text, reviver);
  }) as typeof JSON.parse;
  try {
    return { result: fn(), texts };
  } finally {
    JSON.parse = real;
  }
}

t.test('a long too-deep body gets the depth answer and JSON.parse never sees the deep part', async (t) => {
  const levels = DEPTH_PRESCAN_MIN_LENGTH;
  const single = request('"abc"', deep(levels));
  t.ok(single.length >= DEPTH_PRESCAN_MIN_LENGTH, 'over the pre-scan length');
  const one = parsedTexts(() => slots(single));
  t.equal(one.result[0]?.error?.reason, 'TOO_DEEP');
  t.equal(one.result[0]?.id, '"abc"');
  t.ok(
    one.texts.every((s) => s.length < levels),
    'only short texts (the id) were parsed',
  );

  const batch = `[${request('1', '[]')},${request('2', deep(levels))},${deep(levels, '')},{"jsonrpc":"2.0","method":"eth_call","params":${deep(levels)}},${request('3', deep(MAX_NESTING - 1))}]`;
  const many = parsedTexts(() => slots(batch));
  const s = many.result;
  t.equal(s.length, 5);
  t.ok(s[0]?.call, 'a shallow call goes on');
  t.same([s[1]?.error?.reason, s[1]?.id], ['TOO_DEEP', '2'], 'a too-deep call: -32600 with its id');
  t.same([s[2]?.error?.reason, s[2]?.id], ['INVALID_REQUEST', 'null'], 'a too-deep array: not a request object');
  t.same([s[3]?.error?.reason, s[3]?.id], ['TOO_DEEP', 'null'], 'a too-deep notification');
  t.ok(s[4]?.call, 'a call at the limit goes on');
  t.ok(
    many.texts.every((x) => x.length < levels),
    'no too-deep element was parsed',
  );
});

t.test('a long too-deep body that is not JSON around its deep part is still -32700', async (t) => {
  const n = DEPTH_PRESCAN_MIN_LENGTH;
  for (const text of [
    '['.repeat(n),
    `${request('1', deep(n))},`,
    `[${request('1', deep(n))} x]`,
    `[${request('1', deep(n))},]`,
    `{${'{'.repeat(n)}}`,
    `[${request('1x', deep(n))}]`,
    `[{"a":1,}, ${request('1', deep(n))}]`,
  ]) {
    const parsed = parseBody(text, 100);
    t.equal(parsed.kind === 'error' ? parsed.error.code : 'calls', -32700, text.slice(0, 40));
  }
});

t.test('a long too-deep batch over maxBatchSize: 413 batch too large, as for any batch', async (t) => {
  const parsed = parseBody(
    `[${Array(3)
      .fill(request('1', deep(DEPTH_PRESCAN_MIN_LENGTH)))
      .join(',')}]`,
    2,
  );
  t.equal(parsed.kind === 'error' && parsed.error.reason, 'BATCH_TOO_LARGE');
  t.equal(parsed.kind === 'error' && parsed.error.message, 'batch too large: 3 calls, at most 2 allowed');
});

t.test('the pre-scan ignores brackets inside strings, escaped quotes included', async (t) => {
  const brackets = '['.repeat(DEPTH_PRESCAN_MIN_LENGTH);
  // \" does not end a string; \\ before a quote does.
  for (const param of [
    `"${brackets}"`,
    `"\\"${brackets}"`,
    `"\\\\\\"${brackets}\\\\"`,
    `{"\\"${brackets}":"${']'.repeat(100)}"}`,
  ]) {
    const [s] = slots(request('1', `[${param}]`));
    t.ok(s?.call, `a long string of brackets is no nesting: ${param.slice(0, 12)}`);
  }
});
