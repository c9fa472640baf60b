/**
 * One uptime page for every replica (SPEC 12 Replicas): replicas on one real redis-server in
 * front of one real anvil mining a block a second, probing every second, each with the same json
 * webhook. Asserted: one replica at a time probes (the lease); an incident opened, updated and
 * given a post-mortem, and a maintenance window, each made through one replica's admin port, show
 * on the other's /uptime.json within 2 s; each webhook event arrives exactly once (an incident's
 * opening, update and resolution, a window's start told by the replica that made it and its end by
 * the prober); with Redis
 * killed both go on alone (pages answer, both probe), and once it is back (empty) they converge on
 * one prober and the same page again; a prober cut off from Redis without letting go of its lease
 * is replaced within 2 probe intervals; with every replica stopped, a new one shows the history
 * and the incidents.
 */
import t from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { startRedis } from '../helpers/redis.js';
import { get, post } from '../helpers/rpc.js';
import { startSwitchyard, type RunningSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { webhookReceiver } from '../helpers/webhook-receiver.js';

const PROBE_MS = 1_000;

async function page(sy: RunningSwitchyard): Promise<any> {
  const r = await get(`${sy.url}/uptime.json`);
  return r.status === 200 ? r.json() : null;
}

async function shared(sy: RunningSwitchyard): Promise<{ prober: boolean; version: number }> {
  return (await get(`${sy.adminUrl}/status`)).json().uptime.shared;
}

/** Waits until `check` holds on `sy`'s page; returns how long it took (ms). */
async function shows(sy: RunningSwitchyard, what: string, check: (p: any) => boolean): Promise<number> {
  const t0 = Date.now();
  await waitFor(what, async () => {
    const p = await page(sy);
    return p !== null && check(p);
  });
  return Date.now() - t0;
}

t.test('replicas share one uptime page through Redis', async (t) => {
  const redis = await startRedis(t);
  const node = await startAnvil({ args: ['--block-time', '1'] });
  t.teardown(() => node.stop());
  const hook = await webhookReceiver(t);
  const config = {
    upstreams: [{ name: 'anvil', url: node.url }],
    redis: redis.url,
    uptime: { probeIntervalMs: PROBE_MS, webhooks: [{ url: hook.url }] },
  };
  const a = await startSwitchyard(t, config);
  const b = await startSwitchyard(t, config);
  const probers = async (...sys: RunningSwitchyard[]) =>
    (await Promise.all(sys.map(shared))).filter((s) => s.prober).length;

  await waitFor(
    'one prober, both pages',
    async () => (await probers(a, b)) === 1 && (await page(b)) && (await page(a)),
  );
  const [prober, other] = (await shared(a)).prober ? [a, b] : [b, a];
  await shows(other, 'the prober’s probes on the other page', (p) => p.state === 'operational');
  t.equal(await probers(a, b), 1, 'one replica probes');

  // Through the other replica's admin port: shown on the prober's page within 2 s, and the reverse.
  const opened = await post(`${other.adminUrl}/uptime/incidents`, {
    title: 'Slow eth_call',
    status: 'investigating',
    message: 'Calls take 10 s.',
  });
  t.equal(opened.status, 201);
  const id = opened.json().id as number;
  const openMs = await shows(prober, 'the incident on the prober', (p) => p.incidents.some((i: any) => i.id === id));
  t.ok(openMs < 2_000, `opened at one replica, shown by the other in ${openMs} ms`);
  t.equal(
    (await post(`${prober.adminUrl}/uptime/incidents/${id}/updates`, { status: 'identified', message: 'One node.' }))
      .status,
    201,
  );
  const updMs = await shows(other, 'the update on the other', (p) =>
    p.incidents.some((i: any) => i.id === id && i.updates.some((u: any) => u.status === 'identified')),
  );
  t.ok(updMs < 2_000, `updated at one replica, shown by the other in ${updMs} ms`);
  const pm = await fetch(`${other.adminUrl}/uptime/incidents/${id}/postmortem`, {
    method: 'PUT',
    headers: { 'content-type': 'text/markdown' },
    body: '# What happened\n\nA slow node.',
  });
  t.equal(pm.status, 200);
  const pmMs = await shows(prober, 'the post-mortem on the prober', (p) =>
    p.incidents.some((i: any) => i.id === id && i.postmortem === true),
  );
  t.ok(pmMs < 2_000, `post-mortem at one replica, shown by the other in ${pmMs} ms`);
  const start = new Date(Date.now() + 3_600_000).toISOString();
  const end = new Date(Date.now() + 7_200_000).toISOString();
  t.equal((await post(`${prober.adminUrl}/uptime/maintenance`, { start, end, title: 'Node upgrade' })).status, 201);
  const mMs = await shows(other, 'the window on the other', (p) =>
    p.maintenance.some((m: any) => m.title === 'Node upgrade'),
  );
  t.ok(mMs < 2_000, `maintenance window at one replica, shown by the other in ${mMs} ms`);
  t.equal(
    (await post(`${other.adminUrl}/uptime/incidents/${id}/updates`, { status: 'resolved', message: 'Fixed.' })).status,
    201,
  );
  await waitFor('the resolution told', () => hook.bodies.some((b) => b.type === 'incident.resolved'));
  // Every event of this incident was sent once, by the replica that applied it, in order.
  t.same(
    hook.bodies.filter((b) => b.incident?.id === id).map((b) => b.type),
    ['incident.opened', 'incident.updated', 'incident.resolved'],
    'each event sent exactly once across the replicas',
  );
  // A window under way now, made at the other replica: started told by it, ended (with time) by the prober.
  const now = Date.now();
  const short = {
    start: new Date(now - 1_000).toISOString(),
    end: new Date(now + 2_500).toISOString(),
    title: 'Short',
  };
  t.equal((await post(`${other.adminUrl}/uptime/maintenance`, short)).status, 201);
  await waitFor('the window’s end told', () => hook.bodies.some((b) => b.type === 'maintenance.ended'));
  // One more event after it, so a second copy of the end would have arrived by now.
  t.equal(
    (
      await post(`${prober.adminUrl}/uptime/incidents/${id}/updates`, {
        status: 'monitoring',
        message: 'Still watching.',
      })
    ).status,
    201,
  );
  await waitFor('the last update told', () => hook.bodies.filter((b) => b.type === 'incident.updated').length === 2);
  t.same(
    hook.bodies.filter((b) => b.maintenance?.title === 'Short').map((b) => b.type),
    ['maintenance.started', 'maintenance.ended'],
    'the window told once as started and once as ended across the replicas',
  );
  t.same(
    [(await page(a)).incidents.length, (await page(b)).incidents.length],
    [1, 1],
    'both pages list the one incident',
  );
  t.equal(await probers(a, b), 1, 'still one prober');

  // Redis killed: each goes on alone, the pages answer; back (empty): one page again.
  await redis.kill();
  await waitFor('both probe alone', async () => (await probers(a, b)) === 2);
  t.ok((await page(a)) && (await page(b)), 'both pages answer without Redis');
  const during = { status: 'monitoring', message: 'Written while Redis was down.' };
  t.equal(
    (await post(`${b.adminUrl}/uptime/incidents/${id}/updates`, during)).status,
    201,
    'an admin write without Redis',
  );
  await redis.start();
  await waitFor('one prober again', async () => (await probers(a, b)) === 1, { timeoutMs: 30_000 });
  await waitFor('the same page again', async () => {
    const [pa, pb] = [await page(a), await page(b)];
    return pa.checkedAt === pb.checkedAt && pa.incidents.length === 1 && pb.incidents.length === 1;
  });
  t.pass('converged after Redis came back');
  const kept = (p: any): number => p.incidents[0].updates.filter((u: any) => u.message === during.message).length;
  await waitFor(
    'the write made without Redis on both pages',
    async () => kept(await page(a)) === 1 && kept(await page(b)) === 1,
  );
  t.same([kept(await page(a)), kept(await page(b))], [1, 1], 'the write made without Redis kept once on both pages');

  // The prober cut off from Redis (its lease not let go): the other takes over within 2 intervals.
  const [p2, o2] = (await shared(a)).prober ? [a, b] : [b, a];
  const cut = Date.now();
  // @ts-expect-error the rooms are private: the test cuts this replica's Redis connections (not a stop).
  await p2.app.rooms.redis.close();
  await waitFor('the other takes over', async () => (await shared(o2)).prober, { intervalMs: 20 });
  const takeoverMs = Date.now() - cut;
  t.ok(takeoverMs <= 2 * PROBE_MS, `taken over ${takeoverMs} ms after the prober was cut off`);
  const before = (await page(o2)).checkedAt;
  await shows(o2, 'the new prober probes', (p) => p.checkedAt !== before);

  // Every replica stopped; a new one shows the history and the incident from Redis.
  await a.close();
  await b.close();
  const c = await startSwitchyard(t, config);
  await shows(c, 'the history after every replica restarted', (p) =>
    p.incidents.some((i: any) => i.id === id && i.postmortem === true),
  );
  const pc = await page(c);
  t.ok(pc.uptime['24h'] !== null && pc.history.segments.some((s: number | null) => s !== null), 'the history is there');
  t.ok(
    pc.maintenance.some((m: any) => m.title === 'Node upgrade'),
    'the window is there',
  );
});
