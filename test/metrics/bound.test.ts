/**
 * Bound metric children (src/metrics/bound.ts) record into prom-client's own series: the exposition
 * must read exactly as if every value had gone through prom-client's public API, also after a
 * series was reset or removed underneath a child.
 */
import t from 'tap';
import { Counter, Histogram, Registry } from 'prom-client';
import { BoundCounter, BoundHistogram } from '../../src/metrics/bound.js';

const BUCKETS = [0.001, 0.01, 0.1, 1, 10];

function pair(): {
  reg: Registry;
  plain: { c: Counter<string>; h: Histogram<string> };
  bound: { c: Counter<string>; h: Histogram<string> };
} {
  const reg = new Registry();
  const make = (prefix: string) => ({
    c: new Counter({ name: `${prefix}_calls_total`, help: 'h', labelNames: ['method', 'outcome'], registers: [reg] }),
    h: new Histogram({
      name: `${prefix}_seconds`,
      help: 'h',
      labelNames: ['method'],
      buckets: BUCKETS,
      registers: [reg],
    }),
  });
  return { reg, plain: make('plain'), bound: make('bound') };
}

async function texts(reg: Registry): Promise<{ plain: string; bound: string }> {
  const all = await reg.metrics();
  const pick = (prefix: string) =>
    all
      .split('\n')
      .filter((l) => l.startsWith(`${prefix}_`))
      .map((l) => l.slice(prefix.length))
      .join('\n');
  return { plain: pick('plain'), bound: pick('bound') };
}

t.test('bound children and the public API give the same exposition', async (t) => {
  const { reg, plain, bound } = pair();
  const children = new Map<string, { c: BoundCounter; h: BoundHistogram }>();
  const values = [0, 0.0005, 0.001, 0.004, 0.01, 0.05, 0.2, 1, 3, 10, 11, 1e6];
  let i = 0;
  for (const method of ['eth_call', 'eth_getBalance', 'other']) {
    for (const v of values) {
      const outcome = i++ % 3 === 0 ? 'ok' : 'cached';
      plain.c.inc({ method, outcome });
      plain.h.observe({ method }, v);
      const key = `${method}/${outcome}`;
      if (!children.has(key))
        children.set(key, {
          c: new BoundCounter(bound.c, { method, outcome }),
          h: new BoundHistogram(bound.h, { method }),
        });
      children.get(key)!.c.inc();
      children.get(key)!.h.observe(v);
    }
  }
  const { plain: p, bound: b } = await texts(reg);
  t.ok(p.includes('_calls_total{method="eth_call",outcome="ok"} 4'), 'the counts are there');
  t.ok(p.includes('_seconds_bucket{le="0.01",method="eth_call"}'), 'the buckets are there');
  t.equal(b, p);
});

t.test('a child keeps counting after its series is reset or removed', async (t) => {
  const { reg, plain, bound } = pair();
  const c = new BoundCounter(bound.c, { method: 'eth_call', outcome: 'ok' });
  const h = new BoundHistogram(bound.h, { method: 'eth_call' });
  c.inc(2);
  h.observe(0.5);
  bound.c.reset();
  bound.h.remove({ method: 'eth_call' });
  plain.c.inc({ method: 'eth_call', outcome: 'ok' }, 3);
  plain.h.observe({ method: 'eth_call' }, 0.02);
  plain.h.observe({ method: 'eth_call' }, 2);
  c.inc(3);
  h.observe(0.02);
  h.observe(2);
  const { plain: p, bound: b } = await texts(reg);
  t.equal(b, p);
});

t.test('an unlabeled histogram', async (t) => {
  const reg = new Registry();
  const plain = new Histogram({ name: 'plain_size', help: 'h', buckets: [1, 5, 25], registers: [reg] });
  const boundMetric = new Histogram({ name: 'bound_size', help: 'h', buckets: [1, 5, 25], registers: [reg] });
  const child = new BoundHistogram(boundMetric, {});
  for (const v of [1, 1, 2, 25, 26, 100]) {
    plain.observe(v);
    child.observe(v);
  }
  const { plain: p, bound: b } = await texts(reg);
  t.ok(p.includes('_size_count 6'));
  t.equal(b, p);
});

t.test('a value observed n times at once reads as n observations', async (t) => {
  const { reg, plain, bound } = pair();
  const h = new BoundHistogram(bound.h, { method: 'eth_call' });
  for (const [v, n] of [
    [0.004, 25],
    [0.2, 3],
    [20, 2],
  ] as const) {
    for (let i = 0; i < n; i++) plain.h.observe({ method: 'eth_call' }, v);
    h.observe(v, n);
  }
  const { plain: p, bound: b } = await texts(reg);
  t.ok(p.includes('_seconds_count{method="eth_call"} 30'), 'thirty observations');
  t.equal(b, p);
  // Through the public API (the series removed underneath the child): still n observations.
  bound.h.remove({ method: 'eth_call' });
  plain.h.remove({ method: 'eth_call' });
  for (let i = 0; i < 4; i++) plain.h.observe({ method: 'eth_call' }, 0.05);
  h.observe(0.05, 4);
  const again = await texts(reg);
  t.equal(again.bound, again.plain);
});
