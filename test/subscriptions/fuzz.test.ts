/**
 * WebSocket frames under the HTTP fuzzer's generator (test/helpers/fuzz-bodies.ts): each body is
 * sent once as an HTTP POST and once as a frame (text when it is valid UTF-8, binary otherwise) on
 * one socket; the frame gets the same answer as the body (same ids, same errors, nothing when HTTP
 * answers nothing), and the socket stays open through all of them.
 */
import fc from 'fast-check';
import t from 'tap';
import WebSocket from 'ws';
import { startAnvil } from '../helpers/anvil.js';
import { bodies, MAX_BODY } from '../helpers/fuzz-bodies.js';
import { request } from 'undici';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { openSocket } from '../helpers/ws.js';

const RUNS = Number(process.env.FUZZ_WS_RUNS ?? 250);
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** What must match between the two answers: ids and, per answer, the error code or "a result". */
// eth_subscribe/eth_unsubscribe are the one difference (HTTP: SUBSCRIPTIONS_NEED_WS): only ids compared.
function shape(v: unknown, codes: boolean): string {
  const one = (o: { id?: unknown; error?: { code?: unknown } }): string =>
    `${JSON.stringify(o.id)}:${!codes ? '' : o.error ? String(o.error.code) : 'result'}`;
  return Array.isArray(v) ? `[${v.map(one).join(',')}]` : one(v as { id?: unknown });
}

t.test('every fuzzed frame is answered as the same HTTP body', async (t) => {
  const node = await startAnvil();
  t.teardown(() => node.stop());
  const sy = await startSwitchyard(t, { upstreams: [{ name: 'a', url: node.url }] });
  const ws = await openSocket(t, sy.url.replace('http', 'ws'));
  const seed = Date.now();
  // Frames over subscriptions.maxMessageBytes close the socket (limits.test.ts), as 413 does over HTTP.
  const inputs = fc.sample(
    bodies.filter((i) => i.body.length < MAX_BODY),
    { numRuns: RUNS, seed },
  );
  let mismatches = 0;
  for (const [k, input] of inputs.entries()) {
    const res = await request(sy.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: input.body,
    });
    const http = { text: await res.body.text() };
    let binary = false;
    try {
      utf8.decode(input.body);
    } catch {
      binary = true;
    }
    ws.socket.send(input.body, { binary });
    const sentinel = `"s-${k}"`;
    ws.socket.send(`{"jsonrpc":"2.0","id":${sentinel},"method":"eth_chainId"}`);
    const isSentinel = (m: { id?: unknown }): boolean => m.id === `s-${k}`;
    const codes = !input.body.includes('subscribe');
    const want = http.text === '' ? null : shape(JSON.parse(http.text), codes);
    const got = await waitFor(`frame ${k} (${input.kind}) answered`, () => {
      if (!ws.messages.some(isSentinel)) return undefined;
      const other = ws.messages.filter((m) => !isSentinel(m) && m.method !== 'eth_subscription');
      if (want !== null && other.length === 0) return undefined;
      ws.messages.length = 0;
      return other;
    });
    const gotShape = got.length === 0 ? null : got.length === 1 ? shape(got[0], codes) : `${got.length} answers`;
    if (gotShape !== want) {
      mismatches++;
      if (mismatches <= 5)
        t.fail(`${input.kind}: frame answered ${gotShape}, HTTP body ${want} (seed ${seed}, input ${k})`);
    }
  }
  t.equal(mismatches, 0, `${inputs.length} frames answered as their HTTP bodies (seed ${seed})`);
  t.equal(ws.socket.readyState, WebSocket.OPEN, 'the socket stayed open');
  t.equal((await ws.ask('{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}')).result, '0xba');
});
