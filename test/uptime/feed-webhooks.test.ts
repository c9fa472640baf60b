/**
 * The feed and the webhooks with Switchyard in front of a real anvil node: killing the node opens
 * an `unreachable` incident and starting it again resolves it; each webhook (json, slack) gets one
 * POST per event, and GET /uptime/feed.atom is valid Atom with one entry per event, whose ids are
 * the webhook bodies' ids. Links follow uptime.publicUrl, else a plain Host header. A receiver that
 * hangs costs nothing but its own deliveries: probes and JSON-RPC calls go on at their pace, the
 * other webhook is told, and shutdown does not wait for it.
 */
import t, { type Test } from 'tap';
import { request as httpRequest } from 'node:http';
import { request } from 'undici';
import type { UptimeReport } from '../../src/uptime/report.js';
import { startAnvil, type AnvilNode } from '../helpers/anvil.js';
import { checkAtom, parseAtom, text } from '../helpers/atom.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { get, post } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { webhookReceiver } from '../helpers/webhook-receiver.js';

async function report(base: string): Promise<UptimeReport> {
  const r = await get(`${base}/uptime.json`);
  if (r.status !== 200) throw new Error(`uptime.json: HTTP ${r.status}`);
  return r.json() as UptimeReport;
}

async function feed(base: string): Promise<{ status: number; type: string; xml: string }> {
  const r = await request(`${base}/uptime/feed.atom`);
  return { status: r.statusCode, type: String(r.headers['content-type']), xml: await r.body.text() };
}

/** GET with a Host header of the test's choosing (undici sets its own). */
function getWithHost(port: number, path: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers: { host } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function anvil(t: Test, port?: number): Promise<AnvilNode> {
  const node = await startAnvil({ port });
  t.teardown(() => node.stop());
  return node;
}

t.test('a killed node: the feed and both webhooks tell the incident and its end', async (t) => {
  const json = await webhookReceiver(t);
  const slack = await webhookReceiver(t);
  const node = await anvil(t);
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'solo', url: node.url }],
    uptime: {
      probeIntervalMs: 100,
      stallAfterSeconds: 3600,
      publicUrl: 'https://status.example.com',
      webhooks: [
        { url: json.url, format: 'json', name: 'ops' },
        { url: slack.url, format: 'slack' },
      ],
    },
  });
  await waitFor('a first probe', () => report(sy.url));
  const empty = await feed(sy.url);
  t.equal(empty.status, 200);
  t.equal(empty.type, 'application/atom+xml; charset=utf-8');
  t.equal(checkAtom(t, empty.xml).length, 0, 'no incident yet: no entry');

  await node.stop();
  await waitFor('the opened event', () => json.bodies.length === 1, { timeoutMs: 20_000 });
  t.match(json.bodies[0], {
    type: 'incident.opened',
    title: 'Incident opened: Chain unreachable',
    page: { chainId: '0xba', url: 'https://status.example.com/uptime' },
    incident: { kind: 'unreachable', endedAt: null },
  });
  await waitFor('slack too', () => slack.bodies.length === 1);
  t.match(slack.bodies[0].text, /^\*Switchyard status\*: Incident opened: Chain unreachable\nNo node answered/);
  const during = checkAtom(t, (await feed(sy.url)).xml);
  t.equal(during.length, 1);
  t.equal(text(during[0]!.id), json.bodies[0].id, "the entry's id is the webhook body's id");
  t.equal(
    during[0]!.link._attributes.href,
    `https://status.example.com/uptime/incidents/${json.bodies[0].incident.id}`,
    "links to the incident's page under uptime.publicUrl",
  );

  const back = await anvil(t, node.port);
  t.equal(back.port, node.port);
  await waitFor('the resolved event', () => json.bodies.length === 2, { timeoutMs: 20_000 });
  t.match(json.bodies[1], { type: 'incident.resolved', incident: { id: json.bodies[0].incident.id } });
  await waitFor('slack too', () => slack.bodies.length === 2);
  t.match(slack.bodies[1].text, /Resolved: Chain unreachable/);
  const after = checkAtom(t, (await feed(sy.url)).xml);
  t.same(
    after.map((e) => text(e.id)),
    [json.bodies[1].id, json.bodies[0].id],
    'two entries, newest first, ids stable across fetches',
  );
  const forged = await getWithHost(Number(new URL(sy.url).port), '/uptime/feed.atom', 'evil.example');
  t.notMatch(forged.body, /evil\.example/, 'with publicUrl set a Host header changes nothing');

  const metrics = (await get(`${sy.adminUrl}/metrics`)).text;
  t.same(metricSamples(metrics, 'switchyard_uptime_webhooks_total', { outcome: 'delivered' }), [4]);
  const status = (await get(`${sy.adminUrl}/status`)).json();
  t.match(status.uptime.webhooks, [
    { name: 'ops', format: 'json' },
    { name: 'webhooks[1]', format: 'slack' },
  ]);
  t.notOk(JSON.stringify(status).includes('SECRETPATH'), 'no webhook URL in /status');
  t.notOk(metrics.includes('SECRETPATH'), 'nor in the metrics');
});

t.test('without publicUrl the links follow a plain Host header; other Host values are refused', async (t) => {
  const node = await anvil(t);
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'solo', url: node.url }],
    uptime: { probeIntervalMs: 100 },
  });
  await waitFor('a first probe', () => report(sy.url));
  const port = Number(new URL(sy.url).port);
  const a = await getWithHost(port, '/uptime/feed.atom', 'rpc.example.net:8545');
  t.equal(a.status, 200);
  checkAtom(t, a.body);
  const { doc } = parseAtom(a.body);
  t.same(
    [doc.feed.link].flat().map((l: any) => l._attributes.href),
    ['http://rpc.example.net:8545/uptime', 'http://rpc.example.net:8545/uptime/feed.atom'],
  );
  const b = await getWithHost(port, '/uptime/feed.atom', 'other.example');
  t.equal(text(parseAtom(b.body).doc.feed.id), text(doc.feed.id), 'the feed id never depends on the Host');
  const bad = await getWithHost(port, '/uptime/feed.atom', 'x"><script>');
  t.equal(bad.status, 400, 'a Host that is not a host name: 400');
  t.match(bad.body, /set uptime\.publicUrl/);
});

t.test('a webhook receiver that hangs: probes, calls and the other webhook go on', async (t) => {
  const hangs = await webhookReceiver(t, () => undefined);
  const told = await webhookReceiver(t);
  const node = await anvil(t);
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'solo', url: node.url }],
    // anvil mines only when asked: the chain stalls by itself, then one block ends the stall.
    uptime: {
      probeIntervalMs: 100,
      stallAfterSeconds: 1,
      webhooks: [
        { url: hangs.url, format: 'json', name: 'hangs' },
        { url: told.url, format: 'json', name: 'told' },
      ],
    },
  });
  await waitFor('the stall told', () => told.bodies.length === 1, { timeoutMs: 20_000 });
  t.equal(told.bodies[0].type, 'incident.opened');
  await waitFor('the hanging receiver holds its delivery', () => hangs.bodies.length === 1);

  const latencies: number[] = [];
  for (let i = 0; i < 50; i++) {
    const t0 = performance.now();
    // Another address each time: every call is a cache miss that reaches the node.
    const address = `0x${(i + 1).toString(16).padStart(40, '0')}`;
    const r = await post(sy.url, { jsonrpc: '2.0', id: i, method: 'eth_getBalance', params: [address, 'latest'] });
    latencies.push(performance.now() - t0);
    if (r.json().result === undefined) t.fail(`call ${i} failed: ${r.text}`);
  }
  latencies.sort((a, b) => a - b);
  const p50 = latencies[25]!;
  const max = latencies[49]!;
  t.comment(`50 eth_getBalance calls while a webhook hangs: p50 ${p50.toFixed(2)} ms, max ${max.toFixed(2)} ms`);
  // A call held behind the hanging delivery would wait out its 10 s attempt.
  t.ok(max < 5_000, `no call waited on the webhook (max ${max.toFixed(1)} ms)`);
  const c1 = (await report(sy.url)).checkedAt;
  await waitFor('probes go on', async () => (await report(sy.url)).checkedAt > c1);

  await post(node.url, { jsonrpc: '2.0', id: 1, method: 'anvil_mine', params: ['0x1'] });
  await waitFor('the end of the stall told', () => told.bodies.length === 2, { timeoutMs: 20_000 });
  t.equal(told.bodies[1].type, 'incident.resolved');
  const status = (await get(`${sy.adminUrl}/status`)).json();
  t.match(status.uptime.webhooks, [
    { name: 'hangs', sending: true },
    { name: 'told', sending: false, waiting: 0 },
  ]);
  const t0 = Date.now();
  await sy.close();
  const closeMs = Date.now() - t0;
  t.ok(closeMs < 3_000, `shutdown does not wait for the hanging receiver (${closeMs} ms)`);
});

t.test('an incident told by an operator: opened, updated, resolved, in the webhooks and the feed', async (t) => {
  const json = await webhookReceiver(t);
  const node = await anvil(t);
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'solo', url: node.url }],
    uptime: { probeIntervalMs: 200, publicUrl: 'https://status.example.com', webhooks: [{ url: json.url }] },
  });
  await waitFor('a first probe', () => report(sy.url));
  const admin = `${sy.adminUrl}/uptime/incidents`;
  const opened = await post(admin, {
    title: 'eth_getLogs <slow>',
    status: 'investigating',
    message: 'Calls take 10 s.',
  });
  t.equal(opened.status, 201);
  const id = opened.json().id as number;
  t.equal((await post(`${admin}/${id}/updates`, { status: 'identified', message: 'One node is slow.' })).status, 201);
  t.equal((await post(`${admin}/${id}/updates`, { status: 'resolved', message: 'Node replaced.' })).status, 201);
  await waitFor('three events', () => json.bodies.length === 3);
  t.match(json.bodies, [
    {
      type: 'incident.opened',
      title: 'Incident opened: eth_getLogs <slow>',
      text: 'Calls take 10 s.',
      url: `https://status.example.com/uptime/incidents/${id}`,
      incident: { id, kind: 'operator', source: 'operator' },
      update: { status: 'investigating', message: 'Calls take 10 s.' },
    },
    { type: 'incident.updated', title: 'Identified: eth_getLogs <slow>', update: { status: 'identified' } },
    { type: 'incident.resolved', update: { status: 'resolved', message: 'Node replaced.' } },
  ]);
  const entries = checkAtom(t, (await feed(sy.url)).xml);
  t.same(
    entries.map((e) => text(e.id)).sort(),
    json.bodies.map((b) => b.id).sort(),
    'one entry per event, with the webhook bodies ids',
  );
  // Two writes in the same millisecond tie on time: the titles are compared as a set.
  t.same(
    entries.map((e) => text(e.title)).sort(),
    [
      'Identified: eth_getLogs &#60;slow&#62;',
      'Incident opened: eth_getLogs &#60;slow&#62;',
      'Resolved: eth_getLogs &#60;slow&#62;',
    ],
    'titles escaped as HTML text',
  );
});

t.test('a maintenance window: started and ended in the webhooks, one entry in the feed', async (t) => {
  const json = await webhookReceiver(t);
  const node = await anvil(t);
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'solo', url: node.url }],
    uptime: { probeIntervalMs: 100, webhooks: [{ url: json.url, format: 'json' }] },
  });
  await waitFor('a first probe', () => report(sy.url));
  const start = new Date(Date.now() - 60_000).toISOString();
  const end = new Date(Date.now() + 3_600_000).toISOString();
  const made = await post(`${sy.adminUrl}/uptime/maintenance`, { title: 'Node <upgrade>', start, end });
  t.equal(made.status, 201);
  const id = made.json().window.id as string;
  await waitFor('started', () => json.bodies.length === 1);
  t.match(json.bodies[0], {
    type: 'maintenance.started',
    title: 'Maintenance started: Node <upgrade>',
    maintenance: { id, title: 'Node <upgrade>', start, end },
  });
  const entries = checkAtom(t, (await feed(sy.url)).xml);
  t.equal(entries.length, 1, 'one entry for the window');
  t.equal(text(entries[0]!.title), 'Maintenance: Node &#60;upgrade&#62;');
  const ended = await request(`${sy.adminUrl}/uptime/maintenance/${id}`, {
    method: 'DELETE',
    headers: { 'content-type': 'application/json' },
  });
  t.equal(ended.statusCode, 200, 'DELETE ends an ongoing window now');
  await ended.body.dump();
  await waitFor('ended', () => json.bodies.length === 2);
  t.match(json.bodies[1], { type: 'maintenance.ended', maintenance: { id } });
  t.not(json.bodies[1].id, json.bodies[0].id);
});
