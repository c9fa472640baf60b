/**
 * Incidents told by people (SPEC 12.2) through the admin port of a Switchyard in front of a real
 * anvil node: an incident opened by hand, its updates and post-mortem, in uptime.json, on its own
 * page and in the archive (paged); bad input (unknown id 404, a status outside the four 400 naming
 * them, a post-mortem over 64 KiB 413, bounds on title and message, wrong content types); the
 * admin-write rule (admin.token: 401, refused writes counted); a probe's incident (the node
 * killed) takes updates but closes only when its check holds; and a store file keeps it all
 * across a restart.
 */
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import type { UptimeReport } from '../../src/uptime/report.js';
import { startAnvil } from '../helpers/anvil.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { get, post, type RawResponse } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

async function report(base: string): Promise<UptimeReport> {
  const r = await get(`${base}/uptime.json`);
  if (r.status !== 200) throw new Error(`uptime.json: HTTP ${r.status}`);
  return r.json() as UptimeReport;
}

async function put(url: string, body: string, headers: Record<string, string> = {}): Promise<RawResponse> {
  const res = await request(url, {
    method: 'PUT',
    headers: { 'content-type': 'text/markdown; charset=utf-8', ...headers },
    body,
  });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text, json: () => JSON.parse(text) };
}

function tempDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-incidents-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

t.test('an incident opened by hand: updates, post-mortem, pages, archive, bad input', async (t) => {
  const node = await startAnvil();
  t.teardown(() => node.stop());
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'node-a', url: node.url }],
    uptime: { probeIntervalMs: 200, title: 'Devnet status' },
  });
  await waitFor('a first probe', () => report(sy.url).then((r) => r.state === 'operational'));
  const admin = `${sy.adminUrl}/uptime/incidents`;

  const opened = await post(admin, { title: 'eth_getLogs slow', status: 'investigating', message: 'Calls take 10 s.' });
  t.equal(opened.status, 201, 'POST /uptime/incidents: 201');
  const inc = opened.json() as { id: number; page: string };
  t.match(inc, {
    kind: 'operator',
    source: 'operator',
    summary: 'eth_getLogs slow',
    endedAt: null,
    updates: [{ status: 'investigating', message: 'Calls take 10 s.' }],
    postmortem: null,
    page: `/uptime/incidents/${inc.id}`,
  });

  const listed = (await report(sy.url)).incidents.find((i) => i.id === inc.id);
  t.match(listed, { source: 'operator', postmortem: false, endedAt: null }, 'in uptime.json at once');
  t.same(
    listed?.updates.map((u) => u.status),
    ['investigating'],
  );

  const update = (id: number, body: object): Promise<RawResponse> => post(`${admin}/${id}/updates`, body);
  t.equal((await update(inc.id, { status: 'identified', message: 'One node is slow.' })).status, 201);
  const resolved = await update(inc.id, { status: 'resolved', message: 'The node was replaced.' });
  t.equal(resolved.status, 201);
  t.ok(resolved.json().endedAt, 'resolved closes a hand-opened incident');
  const pm = await put(
    `${admin}/${inc.id}/postmortem`,
    '# What happened\n\nA disk filled up. <script>alert(1)</script> [x](javascript:alert(1))',
  );
  t.equal(pm.status, 200, 'PUT .../postmortem: 200');
  t.ok(pm.json().postmortem.at, 'the post-mortem is attached');

  const line = (await report(sy.url)).incidents.find((i) => i.id === inc.id)!;
  t.same(
    line.updates.map((u) => u.status),
    ['resolved', 'identified', 'investigating'],
    'updates newest first',
  );
  t.equal(line.postmortem, true);
  t.ok(line.endedAt !== null && line.updates.every((u) => typeof u.at === 'string'), 'times in ISO 8601');

  const page = await get(`${sy.url}/uptime/incidents/${inc.id}`);
  t.equal(page.status, 200, 'the incident page');
  t.match(page.headers['content-type'], /^text\/html/);
  t.match(page.headers['content-security-policy'], /default-src 'none'/);
  t.notMatch(page.headers['content-security-policy'], /script-src/, 'it runs no script at all');
  const order = ['The node was replaced.', 'One node is slow.', 'Calls take 10 s.'].map((m) => page.text.indexOf(m));
  t.ok(
    order.every((i, n) => i > 0 && (n === 0 || i > order[n - 1]!)),
    'the timeline newest first',
  );
  t.match(page.text, /<h3>What happened<\/h3>/, "the post-mortem, rendered (its headings under the page's)");
  t.notMatch(page.text, /<script/i, 'no script element');
  t.notMatch(page.text, /href="javascript:/i, 'no javascript: link');
  t.equal((await get(`${sy.url}/uptime/incidents/99999`)).status, 404, 'unknown id: a 404 page');
  t.equal((await get(`${sy.url}/uptime/incidents/abc`)).status, 404);

  await t.test('bad input', async (t) => {
    const unknown = await update(99999, { status: 'identified', message: 'x' });
    t.equal(unknown.status, 404, 'unknown incident id: 404');
    t.match(unknown.json(), { error: 'no incident 99999' });
    t.equal((await put(`${admin}/99999/postmortem`, '# x')).status, 404, 'post-mortem of an unknown id: 404');
    const status = await update(inc.id, { status: 'fixed', message: 'x' });
    t.equal(status.status, 400, 'a status outside the four: 400');
    t.match(status.json(), {
      error: /investigating, identified, monitoring, resolved/,
      allowed: ['investigating', 'identified', 'monitoring', 'resolved'],
    });
    t.equal((await post(admin, { title: 'x'.repeat(201), status: 'investigating', message: 'm' })).status, 400);
    t.equal((await post(admin, { title: '  ', status: 'investigating', message: 'm' })).status, 400, 'blank title');
    t.equal((await update(inc.id, { status: 'monitoring', message: 'm'.repeat(2001) })).status, 400, 'long message');
    t.equal((await update(inc.id, { status: 'monitoring', message: 'm', extra: 1 })).status, 400, 'unknown key');
    t.equal((await post(`${admin}/${inc.id}/updates`, 'not json')).status, 400);
    t.equal((await post(admin, { title: 't' }, { 'content-type': 'text/plain' })).status, 415, 'POST needs JSON');
    t.equal((await put(`${admin}/${inc.id}/postmortem`, '# x', { 'content-type': 'text/plain' })).status, 415);
    const big = await put(`${admin}/${inc.id}/postmortem`, 'a'.repeat(65_537));
    t.equal(big.status, 413, 'a post-mortem over 64 KiB: 413');
    t.equal((await put(`${admin}/${inc.id}/postmortem`, 'é'.repeat(32_768))).status, 200, 'exactly 64 KiB is kept');
    t.equal((await put(`${admin}/${inc.id}/postmortem`, ' \n')).status, 400, 'an empty post-mortem');
    t.equal((await get(`${admin}/${inc.id}/updates`)).status, 405);
    const stored = await get(`${admin}/${inc.id}`);
    t.equal(stored.status, 200, 'GET on the admin port: the incident as stored');
    t.equal(stored.json().postmortem.markdown, 'é'.repeat(32_768), 'with the post-mortem text');
  });

  await t.test('the archive: every incident, newest first, 25 a page', async (t) => {
    for (let n = 0; n < 26; n++) {
      const r = await post(admin, { title: `incident ${n}`, status: 'resolved', message: 'over' });
      t.equal(r.status, 201);
    }
    const first = await get(`${sy.url}/uptime/incidents`);
    t.equal(first.status, 200);
    t.match(first.text, /27 in all, newest first &middot; page 1 of 2/);
    t.equal((first.text.match(/<li>/g) ?? []).length, 25, '25 on page 1');
    t.ok(first.text.indexOf('incident 25') < first.text.indexOf('incident 24'), 'newest first');
    t.match(first.text, /href="incidents\?page=2"/, 'a link to the older page');
    const second = await get(`${sy.url}/uptime/incidents?page=2`);
    t.equal((second.text.match(/<li>/g) ?? []).length, 2, '2 on page 2');
    t.match(second.text, /eth_getLogs slow/);
    t.match(second.text, new RegExp(`href="incidents/${inc.id}"`), 'each links to its page');
    t.equal((await get(`${sy.url}/uptime/incidents?page=3`)).status, 404, 'past the last page: 404');
    t.equal((await get(`${sy.url}/uptime/incidents?page=x`)).status, 404);
  });
});

t.test('admin.token set: incident writes need it; refused ones are counted and change nothing', async (t) => {
  const node = await startAnvil();
  t.teardown(() => node.stop());
  const token = 'incident-token-0123456789';
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'node-a', url: node.url }],
    admin: { token },
    uptime: { probeIntervalMs: 200 },
  });
  await waitFor('a first probe', () => report(sy.url).then(() => true));
  const admin = `${sy.adminUrl}/uptime/incidents`;
  const body = { title: 'x', status: 'investigating', message: 'm' };
  t.equal((await post(admin, body)).status, 401, 'no token: 401');
  t.equal((await post(admin, body, { authorization: 'Bearer wrong-token-0123456789' })).status, 401);
  t.equal((await put(`${admin}/1/postmortem`, '# x')).status, 401, 'PUT too');
  const refused = metricSamples((await get(`${sy.adminUrl}/metrics`)).text, 'switchyard_admin_writes_refused_total');
  t.equal(
    refused.reduce((a, b) => a + b, 0),
    3,
    'each refused write counted',
  );
  t.same((await report(sy.url)).incidents, [], 'nothing was opened');
  const ok = await post(admin, body, { authorization: `Bearer ${token}` });
  t.equal(ok.status, 201, 'with the token: 201');
});

t.test(
  "a probe's incident takes updates but closes only when its check holds; a store file keeps it all",
  async (t) => {
    const node = await startAnvil();
    t.teardown(() => node.stop());
    const file = join(tempDir(t), 'uptime.db');
    const config = {
      upstreams: [{ name: 'node-a', url: node.url }],
      uptime: { probeIntervalMs: 200, store: file },
    };
    const sy = await startSwitchyard(t, config);
    await waitFor('a first probe', () => report(sy.url).then((r) => r.state === 'operational'));
    await node.stop();
    const open = await waitFor(
      'an unreachable incident',
      async () => (await report(sy.url)).incidents.find((i) => i.kind === 'unreachable' && i.endedAt === null),
      { timeoutMs: 20_000, intervalMs: 100 },
    );
    t.equal(open.source, 'probe');
    const admin = `${sy.adminUrl}/uptime/incidents/${open.id}`;
    t.equal((await post(`${admin}/updates`, { status: 'identified', message: 'The node host is down.' })).status, 201);
    const said = await post(`${admin}/updates`, { status: 'resolved', message: 'Should be back.' });
    t.equal(said.status, 201);
    t.equal(said.json().endedAt, null, "a 'resolved' update does not close a probe's incident");
    t.equal((await put(`${admin}/postmortem`, 'The host lost power.')).status, 200);
    const line = (await report(sy.url)).incidents.find((i) => i.id === open.id)!;
    t.same(
      line.updates.map((u) => u.status),
      ['resolved', 'identified'],
    );
    t.equal(line.endedAt, null, 'still open in uptime.json');
    const page = (await get(`${sy.url}/uptime/incidents/${open.id}`)).text;
    t.match(page, /Detected by the probes: No node answered eth_chainId with 0xba/, 'the probe start in the timeline');

    const back = await startAnvil({ port: node.port });
    t.teardown(() => back.stop());
    const closed = await waitFor(
      'the check to hold and the incident to close',
      async () => (await report(sy.url)).incidents.find((i) => i.id === open.id && i.endedAt !== null),
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    t.ok(closed.endedAt, 'closed by its check');
    t.match(
      (await get(`${sy.url}/uptime/incidents/${open.id}`)).text,
      /The probes found the check holding again/,
      'the end in the timeline',
    );
    await sy.close();

    const again = await startSwitchyard(t, config);
    await waitFor('a first probe after the restart', () => report(again.url).then(() => true));
    const kept = (await report(again.url)).incidents.find((i) => i.id === open.id);
    t.match(kept, { source: 'probe', postmortem: true }, 'the incident, its updates and post-mortem survive a restart');
    t.equal(kept?.updates.length, 2);
  },
);
