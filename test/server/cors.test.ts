/**
 * CORS (SPEC 3.2 OPTIONS row; `server.cors.origins`): a preflight is 204 with the allowed methods
 * and headers; a listed Origin is echoed with `Vary: Origin`; an unlisted one gets no
 * access-control-allow-origin; `["*"]` (the default) answers `*` to anyone.
 */
import t from 'tap';
import { request } from 'undici';
import { startFakeNode } from '../helpers/fake-node.js';
import { startSwitchyard } from '../helpers/switchyard.js';

const node = await startFakeNode(t);
const CALL = '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}';

async function send(url: string, method: 'OPTIONS' | 'POST' | 'GET', headers: Record<string, string>) {
  const res = await request(url, { method, headers, body: method === 'POST' ? CALL : undefined });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text };
}

const preflight = (origin: string | undefined, requestHeaders = 'content-type') =>
  ({
    ...(origin === undefined ? {} : { origin }),
    'access-control-request-method': 'POST',
    'access-control-request-headers': requestHeaders,
  }) as Record<string, string>;

const varyHasOrigin = (v: unknown): boolean =>
  typeof v === 'string' && v.split(',').some((x) => x.trim().toLowerCase() === 'origin');

t.test('listed origins: echoed with Vary, others get no allow-origin', async (t) => {
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'a', url: node.url }],
    server: { cors: { origins: ['https://app.example', 'https://other.example'] } },
  });

  const pre = await send(sy.url, 'OPTIONS', preflight('https://app.example', 'content-type, x-api-key'));
  t.equal(pre.status, 204, 'preflight: 204');
  t.equal(pre.text, '', 'no body');
  t.equal(pre.headers['access-control-allow-origin'], 'https://app.example', 'the origin echoed');
  t.ok(varyHasOrigin(pre.headers.vary), 'Vary: Origin');
  const methods = String(pre.headers['access-control-allow-methods'])
    .split(',')
    .map((m) => m.trim());
  t.ok(
    methods.includes('POST') && methods.includes('OPTIONS'),
    `allow-methods lists POST and OPTIONS (${methods.join(', ')})`,
  );
  const allowed = String(pre.headers['access-control-allow-headers']).toLowerCase();
  t.ok(
    allowed.includes('content-type') && allowed.includes('x-api-key'),
    `allow-headers covers what the browser asked for (${allowed})`,
  );
  t.ok(Number(pre.headers['access-control-max-age']) > 0, 'the preflight may be cached');

  const second = await send(sy.url, 'OPTIONS', preflight('https://other.example'));
  t.equal(
    second.headers['access-control-allow-origin'],
    'https://other.example',
    'each listed origin gets itself back',
  );

  const post = await send(sy.url, 'POST', { 'content-type': 'application/json', origin: 'https://app.example' });
  t.equal(post.status, 200);
  t.equal(post.text, '{"jsonrpc":"2.0","id":1,"result":"0xba"}');
  t.equal(post.headers['access-control-allow-origin'], 'https://app.example', 'the actual POST carries the echo too');
  t.ok(varyHasOrigin(post.headers.vary), 'and Vary: Origin');
  t.match(
    String(post.headers['access-control-expose-headers']),
    /retry-after/i,
    'Retry-After is readable by the page (a 429 says when to retry)',
  );

  for (const origin of [
    'https://evil.example',
    'https://app.example.evil.example',
    'http://app.example',
    'null',
    'HTTPS://APP.EXAMPLE',
  ]) {
    const p = await send(sy.url, 'OPTIONS', preflight(origin));
    t.equal(p.status, 204, `${origin}: preflight still 204`);
    t.notOk('access-control-allow-origin' in p.headers, `${origin}: no access-control-allow-origin on the preflight`);
    const q = await send(sy.url, 'POST', { 'content-type': 'application/json', origin });
    t.equal(q.status, 200, `${origin}: the POST itself is answered (CORS is the browser's to enforce)`);
    t.notOk('access-control-allow-origin' in q.headers, `${origin}: no access-control-allow-origin on the POST`);
    // The answer depends on Origin, so a shared cache must key on it even when the origin is refused.
    t.ok(varyHasOrigin(q.headers.vary), `${origin}: Vary: Origin all the same`);
  }
  const none = await send(sy.url, 'POST', { 'content-type': 'application/json' });
  t.notOk('access-control-allow-origin' in none.headers, 'no Origin header (not a browser): no CORS header');
});

t.test('["*"]: any origin gets *', async (t) => {
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'a', url: node.url }],
    server: { cors: { origins: ['*'] } },
  });
  for (const origin of ['https://app.example', 'https://anything.example', 'null']) {
    const pre = await send(sy.url, 'OPTIONS', preflight(origin));
    t.equal(pre.status, 204);
    t.equal(pre.headers['access-control-allow-origin'], '*', `${origin}: preflight *`);
    const post = await send(sy.url, 'POST', { 'content-type': 'application/json', origin });
    t.equal(post.headers['access-control-allow-origin'], '*', `${origin}: POST *`);
    t.match(String(post.headers['access-control-expose-headers']), /retry-after/i, `${origin}: Retry-After exposed`);
  }
  const get = await send(sy.url, 'GET', { origin: 'https://app.example' });
  t.equal(get.status, 200);
  t.equal(get.headers['access-control-allow-origin'], '*', 'GET / too');
});

t.test('the default is ["*"]; [] turns CORS off', async (t) => {
  const dflt = await startSwitchyard(t, { upstreams: [{ name: 'a', url: node.url }] });
  t.equal(
    (await send(dflt.url, 'OPTIONS', preflight('https://app.example'))).headers['access-control-allow-origin'],
    '*',
    'default: *',
  );
  const off = await startSwitchyard(t, {
    upstreams: [{ name: 'a', url: node.url }],
    server: { cors: { origins: [] } },
  });
  const pre = await send(off.url, 'OPTIONS', preflight('https://app.example'));
  t.equal(pre.status, 204);
  t.notOk('access-control-allow-origin' in pre.headers, '[]: no allow-origin for anyone');
});

t.test('a refusal before processing carries the CORS headers too (a browser can read the 429/413)', async (t) => {
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'a', url: node.url }],
    server: { cors: { origins: ['https://app.example'] }, maxBodyBytes: 64 },
  });
  const big = await request(sy.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: 'https://app.example' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'web3_sha3', params: ['0x'.padEnd(200, '0')] }),
  });
  await big.body.text();
  t.equal(big.statusCode, 413);
  t.equal(big.headers['access-control-allow-origin'], 'https://app.example', '413 with the echo');
  const bad = await request(sy.url, {
    method: 'POST',
    headers: { 'content-type': 'text/plain', origin: 'https://app.example' },
    body: CALL,
  });
  await bad.body.text();
  t.equal(bad.statusCode, 415);
  t.equal(bad.headers['access-control-allow-origin'], 'https://app.example', '415 with the echo');
});
