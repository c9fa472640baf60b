/**
 * Label children bound once, recorded without per-call work. prom-client turns the label object of
 * every inc()/observe() into a hash string (sorting, validating, joining) and its labels() children
 * do the same again on each call; on the hot path that was a microsecond per record. A bound child
 * finds its series once and then adds to it directly.
 * It reads prom-client's per-series record (hashMap entry: `value` for a counter; `sum`, `count`,
 * `bucketValues` for a histogram). If that record is not where it is expected (another prom-client
 * version, or the series was reset or removed), the child goes through the public API for that
 * call and binds again, so a count is never lost; test/metrics/bound.test.ts pins the agreement.
 */
import type { Counter, Histogram } from 'prom-client';

type Labels = Record<string, string>;

interface CounterRecord {
  value: number;
}

interface HistogramRecord {
  sum: number;
  count: number;
  bucketValues: Record<string, number>;
}

interface Internals<R> {
  hashMap?: Record<string, R & { labels: Labels }>;
  upperBounds?: number[];
}

/** The key and record of the series with exactly these labels, after the public API created it. */
function findSeries<R>(metric: Internals<R>, labels: Labels): { key: string; record: R } | null {
  const map = metric.hashMap;
  if (map === undefined || map === null || typeof map !== 'object') return null;
  const names = Object.keys(labels);
  for (const key of Object.keys(map)) {
    const r = map[key]!;
    const l = r.labels ?? {};
    if (Object.keys(l).length === names.length && names.every((n) => l[n] === labels[n])) return { key, record: r };
  }
  return null;
}

export class BoundCounter {
  private key = '';
  private record: CounterRecord | null = null;

  constructor(
    private readonly metric: Counter<string>,
    private readonly labels: Labels,
  ) {
    this.bind();
  }

  private bind(): void {
    this.metric.inc(this.labels, 0);
    const found = findSeries<CounterRecord>(this.metric as unknown as Internals<CounterRecord>, this.labels);
    this.key = found?.key ?? '';
    this.record = found !== null && typeof found.record.value === 'number' ? found.record : null;
  }

  inc(n = 1): void {
    const r = this.record;
    if (r !== null && (this.metric as unknown as Internals<CounterRecord>).hashMap![this.key] === r) {
      r.value += n;
      return;
    }
    this.metric.inc(this.labels, n);
    this.bind();
  }
}

export class BoundHistogram {
  private key = '';
  private record: HistogramRecord | null = null;
  private readonly bounds: number[];
  private readonly bucketKeys: string[];

  constructor(
    private readonly metric: Histogram<string>,
    private readonly labels: Labels,
  ) {
    this.bounds = [...((metric as unknown as Internals<HistogramRecord>).upperBounds ?? [])];
    this.bucketKeys = this.bounds.map(String);
    this.bind();
  }

  private bind(): void {
    const internals = this.metric as unknown as Internals<HistogramRecord>;
    let found = findSeries<HistogramRecord>(internals, this.labels);
    if (found === null) {
      // zero() creates the series; only when it does not exist yet, since it also resets one.
      this.metric.zero(this.labels);
      found = findSeries<HistogramRecord>(internals, this.labels);
    }
    const r = found?.record;
    const usable =
      r !== undefined &&
      typeof r.sum === 'number' &&
      typeof r.count === 'number' &&
      this.bucketKeys.length > 0 &&
      this.bucketKeys.every((k) => typeof r.bucketValues?.[k] === 'number');
    this.key = found?.key ?? '';
    this.record = usable ? r : null;
  }

  /** `times` observations of `v` (the calls of one exchange share its time). */
  observe(v: number, times = 1): void {
    const r = this.record;
    if (
      r !== null &&
      Number.isFinite(v) &&
      (this.metric as unknown as Internals<HistogramRecord>).hashMap![this.key] === r
    ) {
      r.sum += v * times;
      r.count += times;
      const bounds = this.bounds;
      for (let i = 0; i < bounds.length; i++) {
        if (v <= bounds[i]!) {
          r.bucketValues[this.bucketKeys[i]!]! += times;
          break;
        }
      }
      return;
    }
    for (let i = 0; i < times; i++) this.metric.observe(this.labels, v);
    this.bind();
  }
}

/** Bound children by one or two label values, made on first use. Label sets are bounded by the callers. */
export class Children<T> {
  private readonly byFirst = new Map<string, Map<string, T>>();

  constructor(private readonly make: (a: string, b: string) => T) {}

  get(a: string, b = ''): T {
    let inner = this.byFirst.get(a);
    if (inner === undefined) {
      inner = new Map();
      this.byFirst.set(a, inner);
    }
    let child = inner.get(b);
    if (child === undefined) {
      child = this.make(a, b);
      inner.set(b, child);
    }
    return child;
  }

  clear(): void {
    this.byFirst.clear();
  }
}
