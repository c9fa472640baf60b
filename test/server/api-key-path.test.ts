/**
 * `/key/<api key>` with a malformed percent-escape (`/key/%ff`) is an unknown key, over HTTP and
 * over a WebSocket upgrade: the same answer an unknown key gets (401, -32001 "invalid API key"),
 * never a 500, and never an uncaught URIError that ends the process. Against the built CLI, so a
 * crash in the upgrade handler shows as the process exiting.
 */
import { writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import t from 'tap';
import { request } from 'undici';
import { startAnvil } from '../helpers/anvil.js';
import { listeningPorts, runCli } from '../helpers/cli.js';
import { get, post } from '../helpers/rpc.js';
import { waitFor } from '../helpers/wait.js';

const KEY = 'partner-key-0123456789';
const CHAIN_ID = '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}';

const node = await startAnvil();
t.teardown(() => node.stop());
const file = join(t.testdir(), 'config.yaml');
writeFileSync(
  file,
  `
server: { host: 127.0.0.1, port: 0, wsPort: null, shutdownDelayMs: 0 }
admin: { host: 127.0.0.1, port: 0 }
upstreams: [ { name: solo, url: "${node.url}" } ]
routing: { headPollMs: 100 }
rateLimit: { perIp: null, apiKeys: [ { name: partner, key: ${KEY}, ratePerSec: 100, burst: 200 } ] }
log: { level: info }
`,
);
const cli = runCli(t, ['--config', file]);
const ports = await waitFor('listening line', () => listeningPorts(cli.stdout()));
const base = `http://127.0.0.1:${ports.http}`;
await waitFor('ready', async () => (await get(`http://127.0.0.1:${ports.admin}/ready?upstreams=1`)).status === 200);

async function raw(method: string, path: string): Promise<{ status: number; text: string }> {
  const body = method === 'POST' || method === 'PUT' ? CHAIN_ID : undefined;
  const res = await request(`${base}${path}`, {
    method: method as 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  return { status: res.statusCode, text: await res.body.text() };
}

/** An upgrade request; resolves with the refusal's status and body (the upgrade is never accepted here). */
function upgrade(path: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${base}${path}`, {
      agent: false,
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
      },
    });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('upgrade', (_res, socket) => {
      socket.destroy();
      reject(new Error('upgrade accepted'));
    });
    req.on('error', reject);
    req.end();
  });
}

t.test('HTTP: a malformed escape in the key gets what an unknown key gets', async (t) => {
  for (const method of ['POST', 'GET', 'OPTIONS', 'PUT']) {
    const bad = await raw(method, '/key/%ff');
    const unknown = await raw(method, '/key/not-a-configured-key-at-all');
    t.equal(bad.status, unknown.status, `${method}: same status as an unknown key`);
    t.equal(bad.text, unknown.text, `${method}: same body as an unknown key`);
    t.not(bad.status, 500, `${method}: not a 500`);
  }
  const r = await post(`${base}/key/%ff`, CHAIN_ID);
  t.equal(r.status, 401);
  t.same(r.json().error.code, -32001);
  t.equal(r.json().error.message, 'invalid API key');
  t.equal(r.json().id, null);
  t.equal((await post(`${base}/key/${KEY}`, CHAIN_ID)).json().result, '0xba', 'a configured key still works');
  t.notMatch(cli.stdout(), /handler crashed/, 'no crash logged');
});

t.test('WebSocket upgrade: refused with 401 and the process goes on', async (t) => {
  for (const path of ['/key/%ff', '/key/%E0%A4%A']) {
    const r = await upgrade(path);
    t.equal(r.status, 401, `${path}: upgrade refused with 401`);
    const body = JSON.parse(r.text);
    t.equal(body.error.code, -32001, `${path}: -32001`);
    t.equal(body.id, null);
  }
  t.equal(cli.proc.exitCode, null, 'the process is still running');
  t.equal(cli.proc.signalCode, null, 'the process is still running');
  t.equal((await post(base, CHAIN_ID)).json().result, '0xba', 'and still serving');
});
