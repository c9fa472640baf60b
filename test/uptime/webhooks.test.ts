/**
 * Uptime webhooks against real local HTTP receivers (port 0): the json and slack bodies, a
 * receiver answering 500 then 200 (retried, then delivered, order kept), one that hangs (costs
 * only its own deliveries), the queue bound (oldest dropped, counted), giving up, an endless
 * answer read only up to its bound, a reload, close with a delivery in backoff (no timer left),
 * and a webhook URL that appears in no log line, /status entry or metric.
 * Waits are shortened through the internal tuning (backoff of milliseconds, not minutes).
 */
import t, { type Test } from 'tap';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createLogger } from '../../src/log/logger.js';
import { Metrics } from '../../src/metrics/registry.js';
import { openedEvent, resolvedEvent, type EventIncident } from '../../src/uptime/notify/events.js';
import { Webhooks, backoffMs, WEBHOOK_OUTCOMES, type WebhookTuning } from '../../src/uptime/notify/webhooks.js';
import type { WebhookConfig } from '../../src/config/uptime-schema.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { listenUntilTeardown } from '../helpers/ports.js';
import { waitFor } from '../helpers/wait.js';

interface Received {
  body: string;
  headers: IncomingMessage['headers'];
  path: string;
}

type Answer = (req: IncomingMessage, res: ServerResponse, n: number) => void;

/** A receiver that records every request's body; `answer` decides what it says (default 200). */
async function receiver(t: Test, answer: Answer = (_q, res) => res.end('ok')) {
  const got: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      got.push({ body: Buffer.concat(chunks).toString(), headers: req.headers, path: req.url ?? '' });
      answer(req, res, got.length);
    });
  });
  const port = await listenUntilTeardown(t, server);
  return { url: `http://127.0.0.1:${port}`, port, got };
}

const PAGE = { title: 'Test <status> & co', chainId: '0xba', publicUrl: 'https://rpc.example.com' };
const INCIDENT: EventIncident = {
  id: 7,
  kind: 'unreachable',
  startedAt: '2026-11-26T10:00:00.000Z',
  endedAt: null,
  summary: 'No node answered eth_chainId with 0xba',
};
const opened = (id: number) => openedEvent({ ...INCIDENT, id });
const FAST: Partial<WebhookTuning> = { backoffBaseMs: 20, backoffMaxMs: 100, attemptTimeoutMs: 2_000 };

function hooks(
  t: Test,
  list: WebhookConfig[],
  tuning: Partial<WebhookTuning> = FAST,
  log = createLogger('silent'),
): { webhooks: Webhooks; metrics: Metrics; outcomes: () => Promise<Record<string, number>> } {
  const metrics = new Metrics({ processMetrics: false });
  const webhooks = new Webhooks(list, PAGE, { metrics, log, tuning });
  t.teardown(() => webhooks.close());
  const outcomes = async () => {
    const text = await metrics.registry.metrics();
    const out: Record<string, number> = {};
    for (const o of WEBHOOK_OUTCOMES)
      out[o] = metricSamples(text, 'switchyard_uptime_webhooks_total', { outcome: o })[0] ?? -1;
    return out;
  };
  return { webhooks, metrics, outcomes };
}

t.test('json and slack bodies, one POST each', async (t) => {
  const json = await receiver(t);
  const slack = await receiver(t);
  const { webhooks, outcomes } = hooks(t, [
    { url: `${json.url}/hook`, format: 'json' },
    { url: `${slack.url}/services/T0/B0/x`, format: 'slack' },
  ]);
  t.same(await outcomes(), { delivered: 0, retried: 0, failed: 0, dropped: 0 }, 'every outcome reads 0 from the start');
  webhooks.send(opened(7));
  await waitFor('both delivered', () => json.got.length === 1 && slack.got.length === 1);
  t.equal(json.got[0]!.headers['content-type'], 'application/json');
  t.equal(json.got[0]!.path, '/hook');
  const body = JSON.parse(json.got[0]!.body);
  t.match(body, {
    id: /^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    type: 'incident.opened',
    at: INCIDENT.startedAt,
    title: 'Incident opened: Chain unreachable',
    text: INCIDENT.summary,
    url: 'https://rpc.example.com/uptime/incidents/7',
    page: { title: PAGE.title, chainId: '0xba', url: 'https://rpc.example.com/uptime' },
    incident: INCIDENT,
  });
  t.notOk('update' in body, 'no update on an opened event');
  t.same(JSON.parse(slack.got[0]!.body), {
    text:
      '*Test &lt;status&gt; &amp; co*: Incident opened: Chain unreachable\n' +
      'No node answered eth_chainId with 0xba\n<https://rpc.example.com/uptime/incidents/7|Details>',
  });
  webhooks.send(resolvedEvent({ ...INCIDENT, endedAt: '2026-11-26T10:12:00.000Z' }));
  await waitFor('the resolution', () => json.got.length === 2);
  t.match(JSON.parse(json.got[1]!.body), {
    type: 'incident.resolved',
    at: '2026-11-26T10:12:00.000Z',
    text: 'Resolved after 12 min (No node answered eth_chainId with 0xba)',
  });
  t.not(JSON.parse(json.got[1]!.body).id, body.id, 'each event its own id');
  await waitFor('counted: two events to two webhooks', async () => (await outcomes()).delivered === 4);
});

t.test('a receiver answering 500 then 200: retried, then delivered once, order kept', async (t) => {
  const r = await receiver(t, (_q, res, n) => {
    res.statusCode = n === 1 ? 500 : 200;
    res.end();
  });
  const { webhooks, outcomes } = hooks(t, [{ url: r.url, format: 'json' }]);
  webhooks.send(opened(1));
  webhooks.send(opened(2));
  await waitFor('three requests', () => r.got.length === 3);
  t.same(
    r.got.map((g) => JSON.parse(g.body).incident.id),
    [1, 1, 2],
    'the first event again, then the second: one delivery at a time',
  );
  t.equal(JSON.parse(r.got[0]!.body).id, JSON.parse(r.got[1]!.body).id, 'a retry carries the same id');
  await waitFor('counted', async () => (await outcomes()).delivered === 2);
  t.same(await outcomes(), { delivered: 2, retried: 1, failed: 0, dropped: 0 });
});

t.test('a receiver that hangs costs only its own deliveries', async (t) => {
  const hang = await receiver(t, () => undefined);
  const ok = await receiver(t);
  // Anything held behind the hanging receiver would wait out its 10 s attempt.
  const { webhooks, outcomes } = hooks(
    t,
    [
      { url: hang.url, format: 'json', name: 'hangs' },
      { url: ok.url, format: 'json', name: 'answers' },
    ],
    { ...FAST, attemptTimeoutMs: 10_000 },
  );
  const started = Date.now();
  for (let i = 1; i <= 3; i++) webhooks.send(opened(i));
  const sendMs = Date.now() - started;
  t.ok(sendMs < 1_000, `send() only queues: ${sendMs} ms for 3 events`);
  await waitFor('the other receiver has all three', () => ok.got.length === 3);
  const okMs = Date.now() - started;
  t.ok(okMs < 5_000, `the answering webhook got all three in ${okMs} ms while the other hangs`);
  t.equal(hang.got.length, 1, 'the hanging one holds its first delivery, the rest wait behind it');
  t.match(webhooks.status(), [
    { name: 'hangs', waiting: 2, sending: true },
    { name: 'answers', waiting: 0, sending: false },
  ]);
  await webhooks.close();
  t.same(await outcomes(), { delivered: 3, retried: 0, failed: 0, dropped: 3 }, 'close drops and counts its three');
});

t.test('an attempt that hangs times out and is retried', async (t) => {
  const r = await receiver(t, (_q, res, n) => {
    if (n > 1) res.end();
  });
  const { webhooks, outcomes } = hooks(t, [{ url: r.url, format: 'json' }], { ...FAST, attemptTimeoutMs: 200 });
  webhooks.send(opened(1));
  await waitFor('a second attempt', () => r.got.length === 2, { timeoutMs: 10_000 });
  await waitFor('delivered', async () => (await outcomes()).delivered === 1);
  t.same(await outcomes(), { delivered: 1, retried: 1, failed: 0, dropped: 0 });
});

t.test('the queue is bounded: the oldest waiting delivery is dropped and counted', async (t) => {
  const held: ServerResponse[] = [];
  const r = await receiver(t, (_q, res) => held.push(res));
  const { webhooks, outcomes } = hooks(t, [{ url: r.url, format: 'json' }], { ...FAST, maxQueue: 3 });
  for (let i = 1; i <= 10; i++) webhooks.send(opened(i));
  t.same(await outcomes(), { delivered: 0, retried: 0, failed: 0, dropped: 6 }, '1 sending + 3 waiting kept');
  // Answered one at a time: each answer lets the next delivery go.
  for (let k = 1; k <= 4; k++) {
    await waitFor(`request ${k}`, () => held.length === 1);
    held.shift()!.end();
  }
  await waitFor('delivered', async () => (await outcomes()).delivered === 4);
  t.same(
    r.got.map((g) => JSON.parse(g.body).incident.id),
    [1, 8, 9, 10],
    'the one being sent, then the newest three',
  );
});

t.test('given up: after retryForMs, and at once on an answer retrying cannot change', async (t) => {
  const down = await receiver(t, (_q, res) => {
    res.statusCode = 503;
    res.end();
  });
  const gone = await receiver(t, (_q, res) => {
    res.statusCode = 404;
    res.end('no such hook');
  });
  const lines: Record<string, unknown>[] = [];
  const log = createLogger('info', { write: (s: string) => lines.push(JSON.parse(s)) });
  const { webhooks, outcomes } = hooks(
    t,
    [
      { url: down.url, format: 'json', name: 'down' },
      { url: gone.url, format: 'slack' },
    ],
    { ...FAST, retryForMs: 300 },
    log,
  );
  webhooks.send(opened(1));
  await waitFor('both given up', async () => (await outcomes()).failed === 2, { timeoutMs: 10_000 });
  t.equal(gone.got.length, 1, '404: one attempt');
  t.ok(down.got.length >= 2, `503: retried until retryForMs (${down.got.length} attempts)`);
  const o = await outcomes();
  t.equal(o.retried, down.got.length - 1, 'every retry counted');
  t.match(
    lines.filter((l) => l.msg === 'uptime webhook delivery failed; given up'),
    [
      { level: 'warn', webhook: 'webhooks[1]', event: 'incident.opened', attempts: 1, reason: 'http_404' },
      { level: 'warn', webhook: 'down', reason: 'http_503' },
    ],
    'logged by name (or place in the list) and reason',
  );
});

t.test('an endless answer is read only up to its bound', async (t) => {
  let closed = false;
  const r = await receiver(t, (_q, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    const chunk = Buffer.alloc(64 * 1024, 'x');
    const pump = (): void => {
      while (!closed && res.write(chunk));
      if (!closed) res.once('drain', pump);
    };
    res.on('close', () => {
      closed = true;
    });
    pump();
  });
  const { webhooks, outcomes } = hooks(t, [{ url: r.url, format: 'json' }], { ...FAST, attemptTimeoutMs: 30_000 });
  webhooks.send(opened(1));
  await waitFor('delivered', async () => (await outcomes()).delivered === 1, { timeoutMs: 10_000 });
  await waitFor('the receiver sees its answer cut off', () => closed);
  t.pass('delivered on the status, the body dropped after maxResponseBytes');
});

t.test('a reload keeps unchanged webhooks and drops the deliveries of removed ones', async (t) => {
  const held: ServerResponse[] = [];
  const keep = await receiver(t, (_q, res) => held.push(res));
  const drop = await receiver(t, () => undefined);
  const fresh = await receiver(t);
  const a: WebhookConfig = { url: keep.url, format: 'json', name: 'a' };
  const { webhooks, outcomes } = hooks(t, [a, { url: drop.url, format: 'json', name: 'b' }]);
  webhooks.send(opened(1));
  webhooks.send(opened(2));
  await waitFor('both sending', () => held.length === 1 && drop.got.length === 1);
  webhooks.apply([a, { url: fresh.url, format: 'slack', name: 'c' }], PAGE);
  t.same((await outcomes()).dropped, 2, "b's delivery in flight and the one waiting are dropped");
  t.match(webhooks.status(), [
    { name: 'a', waiting: 1, sending: true },
    { name: 'c', waiting: 0 },
  ]);
  held.shift()!.end();
  await waitFor("a's second delivery", () => held.length === 1);
  held.shift()!.end();
  webhooks.send(opened(3));
  await waitFor('c gets the next event', () => fresh.got.length === 1);
  t.match(JSON.parse(fresh.got[0]!.body), { text: /Incident opened/ });
  await waitFor('a gets it too', () => held.length === 1);
  held.shift()!.end();
  t.same(
    keep.got.map((g) => JSON.parse(g.body).incident.id),
    [1, 2, 3],
    'the kept webhook lost nothing',
  );
});

t.test('close with a delivery in backoff leaves no timer and no socket behind', async (t) => {
  const r = await receiver(t, (_q, res) => {
    res.statusCode = 500;
    res.end();
  });
  const timers = () => process.getActiveResourcesInfo().filter((x) => x === 'Timeout').length;
  const before = timers();
  const { webhooks, outcomes } = hooks(t, [{ url: r.url, format: 'json' }], {
    ...FAST,
    backoffBaseMs: 60_000,
    backoffMaxMs: 60_000,
  });
  webhooks.send(opened(1));
  await waitFor('in backoff', async () => (await outcomes()).retried === 1);
  t.ok(timers() > before, 'a retry timer is waiting');
  await webhooks.close();
  t.equal(timers(), before, 'no timer left after close');
  t.same(await outcomes(), { delivered: 0, retried: 1, failed: 0, dropped: 1 });
  webhooks.send(opened(2));
  t.equal(r.got.length, 1, 'nothing is sent after close');
});

t.test('a webhook URL is in no log line, status entry or metric', async (t) => {
  const secret = 'T0SECRET/B0SECRET/k3yK3yK3y';
  const ok = await receiver(t);
  const lines: string[] = [];
  const log = createLogger('debug', { write: (s: string) => lines.push(s) });
  // A port that refuses: the connection error's message names the address; it is never logged.
  const url = `http://127.0.0.1:1/services/${secret}`;
  const { webhooks, metrics, outcomes } = hooks(
    t,
    [
      { url, format: 'slack' },
      { url: `${ok.url}/services/${secret}`, format: 'json' },
    ],
    { ...FAST, retryForMs: 100 },
    log,
  );
  webhooks.send(opened(1));
  await waitFor('given up', async () => (await outcomes()).failed === 1, { timeoutMs: 10_000 });
  const text = [lines.join('\n'), JSON.stringify(webhooks.status()), await metrics.registry.metrics()].join('\n');
  t.ok(
    lines.some((l) => l.includes('ECONNREFUSED')),
    'the error is logged by its code',
  );
  await waitFor('the other delivered', async () => (await outcomes()).delivered === 1);
  for (const s of ['T0SECRET', 'k3yK3yK3y', '127.0.0.1:1', `127.0.0.1:${ok.port}`])
    t.notOk(text.includes(s), `${s} appears nowhere`);
});

t.test('backoff: doubling with jitter, capped', async (t) => {
  const tune = { backoffBaseMs: 1_000, backoffMaxMs: 60_000 };
  t.equal(
    backoffMs(1, tune, () => 0),
    500,
  );
  t.equal(
    backoffMs(1, tune, () => 1),
    1_000,
  );
  t.equal(
    backoffMs(3, tune, () => 1),
    4_000,
  );
  t.equal(
    backoffMs(30, tune, () => 1),
    60_000,
    'capped at backoffMaxMs',
  );
  t.equal(
    backoffMs(1_000, tune, () => 0.5),
    45_000,
    'no overflow on a long run',
  );
});
