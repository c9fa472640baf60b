/**
 * One traced request: its SERVER span (an HTTP request or a WebSocket frame), a span per JSON-RPC
 * call in it (OpenTelemetry's JSON-RPC conventions), a CLIENT span per upstream attempt, and one
 * CLIENT span per exchange of several calls with a node, linking each call's span. Attributes name
 * methods, ids, codes, cache use, attempts, the pinned block and upstreams by name; never params,
 * results, addresses, URLs, keys or tokens. When the request ends, whether its spans are exported
 * is decided (tail.ts): a sampled parent or the head sample, a request slower than tracing.slowMs,
 * or any error (a call's, a failed attempt's, or an HTTP error status). A span is made only when
 * something needs it (an attempt, a plan, the export): an unsampled cache hit makes none, which
 * took its cost beside an untraced twin from 0.83 to 0.88 (docs/tracing.md#cost).
 */
import type { Attributes, SpanContext } from '@opentelemetry/api';
import type { Call } from '../jsonrpc/parse.js';
import type { Outcome } from '../jsonrpc/response.js';
import type { Verdict } from '../upstream/classify.js';
import { isSampled, traceparentOf } from './context.js';
import { type HttpServerRequest, httpServerAttributes } from './http-server.js';
import type { Tracing } from './provider.js';
import { newSpanId, newTraceIds, SpanKind, SpanRecord, type TraceOf } from './record.js';
import { MAX_SPANS_PER_TRACE } from './tail.js';

/** The settings of the request path in force (they reload) over the long-lived provider. */
export interface RequestTracing {
  readonly tracing: Tracing;
  readonly sampleRate: number;
  readonly slowMs: number;
}

/** What the tracing reads of a pipeline Plan (and the one field it writes: the call's span). */
export interface PlanView {
  readonly cache: unknown;
  readonly spec: { readonly block?: number };
  readonly params: readonly unknown[];
  trace?: CallTrace;
}

/** What a call was answered from: `none` for a call no cache level could hold. */
export type CacheUse = 'hit' | 'miss' | 'none';

/** A client's method name outside the method table is cut to this many characters in rpc.method_original. */
const MAX_METHOD_CHARS = 64;
const MAX_ID_CHARS = 128;
const NO_RECORDS: readonly SpanRecord[] = Object.freeze([]);

/**
 * A traced request; null when tracing is off or too many requests are traced at once. `http`: the
 * HTTP request its SERVER span stands for, read only if the trace is exported (http-server.ts).
 */
export function startTrace(
  rt: RequestTracing | null | undefined,
  transport: 'http' | 'websocket',
  parent: SpanContext | null,
  start?: number,
  http?: HttpServerRequest,
): RequestTrace | null {
  if (rt === null || rt === undefined || !rt.tracing.tail.begin()) return null;
  const head = parent !== null ? isSampled(parent) : Math.random() < rt.sampleRate;
  return new RequestTrace(rt, parent, head, transport, start, http);
}

export class RequestTrace implements TraceOf {
  readonly traceId: string;
  private readonly rootSpanId: string;
  private readonly transport: 'http' | 'websocket';
  /** performance.now() when the request began: the SERVER span's start. */
  private readonly start: number;
  /** When its calls were taken up (the first call()), every call span's start; 0 before. */
  private callsAt = 0;
  private failed = false;
  private ended = false;
  /**
   * Each slot's call and its method's label, as taken up. Its span is made only when something
   * needs it (an attempt, a plan, an export): most requests are let go, and a cache hit needs none.
   */
  private readonly taken: (Call | undefined)[] = [];
  private readonly labels: string[] = [];
  /** The call spans made so far, by slot; null while none is (a cache hit that is let go makes none). */
  private calls: (CallTrace | undefined)[] | null = null;
  /** The calls' outcomes, once answered, for the spans made at export. */
  private outcomes: readonly (Outcome | undefined)[] | null = null;
  private answeredAt = 0;
  private directives: string | undefined = undefined;
  private server: SpanRecord | null = null;
  /** The SERVER span first, then the request's other spans as they are made; null while none is. */
  private records: SpanRecord[] | null = null;
  private overflow = 0;

  constructor(
    private readonly rt: RequestTracing,
    /** The client's span (from its traceparent), the SERVER span's parent; null: a trace of our own. */
    readonly remote: SpanContext | null,
    /** The head decision: a sampled parent, the sample at tracing.sampleRate, or force(). */
    public head: boolean,
    transport: 'http' | 'websocket',
    /** When the request began, when the caller has read the clock already. */
    start = performance.now(),
    private readonly http?: HttpServerRequest,
  ) {
    this.transport = transport;
    this.start = start;
    if (remote === null) ({ traceId: this.traceId, rootSpanId: this.rootSpanId } = newTraceIds());
    else {
      this.traceId = remote.traceId;
      this.rootSpanId = newSpanId();
    }
  }

  /** The SERVER span, made when first needed (a call's span, an attempt, the export). */
  get root(): SpanRecord {
    if (this.server === null) {
      const name = this.transport === 'http' ? 'POST' : 'websocket frame';
      const attributes: Attributes = { 'network.protocol.name': this.transport };
      this.server = new SpanRecord(name, SpanKind.SERVER, null, attributes, undefined, this.rootSpanId, this.start);
      (this.records ??= []).push(this.server);
    }
    return this.server;
  }

  /** A span recorded in this trace, unless the trace holds MAX_SPANS_PER_TRACE already (then only counted). */
  record(
    name: string,
    kind: SpanKind,
    parent: SpanRecord,
    attributes: Attributes,
    links?: SpanRecord[],
    start?: number,
  ): SpanRecord {
    const r = new SpanRecord(name, kind, parent, attributes, links, undefined, start);
    const records = (this.records ??= []);
    if (records.length < MAX_SPANS_PER_TRACE) records.push(r);
    else this.overflow++;
    return r;
  }

  /** X-Switchyard-Trace: force (server/directives.ts): recorded and exported whatever the sample. */
  force(): void {
    this.head = true;
  }

  /** The directives applied to the request (server/directives.ts), for the SERVER span. */
  applied(directives: string): void {
    this.directives = directives;
  }

  /** The call in slot `slot` is taken up; its span, under the SERVER span, is made when needed. */
  call(slot: number, call: Call, label: string): void {
    if (this.callsAt === 0) this.callsAt = performance.now();
    this.taken[slot] = call;
    this.labels[slot] = label;
  }

  /** The span of the call in slot `slot`, made now if it has none yet; undefined for a slot not taken up. */
  private callTrace(slot: number): CallTrace | undefined {
    const made = this.calls?.[slot];
    if (made !== undefined) return made;
    const call = this.taken[slot];
    if (call === undefined) return undefined;
    const known = this.labels[slot] !== 'other';
    const name = known ? call.method : '_OTHER';
    const span = this.record(name, SpanKind.INTERNAL, this.root, callAttributes(call, known), undefined, this.callsAt);
    const c = new CallTrace(this, span);
    (this.calls ??= [])[slot] = c;
    return c;
  }

  /**
   * The call in slot `slot` goes to a node under `plan`: the cache level it may fill, the block
   * `latest` was pinned to, and the plan carries the call's span to routing.
   */
  planned(slot: number, call: Call, plan: PlanView): void {
    const c = this.callTrace(slot);
    if (c === undefined) return;
    c.cache = plan.cache === null ? 'none' : 'miss';
    const at = plan.spec.block;
    if (at !== undefined && (call.params[at] === 'latest' || call.params[at] === undefined)) {
      const v = plan.params[at];
      if (typeof v === 'string' && /^0x[0-9a-f]{1,13}$/i.test(v)) c.block = Number.parseInt(v, 16);
    }
    plan.trace = c;
  }

  /** The call span of slot `slot` (made now if needed), when the slot was taken up. */
  at(slot: number): CallTrace | undefined {
    return this.callTrace(slot);
  }

  /** One exchange of several calls with `upstream`: a CLIENT span under the request, linking each call's span. */
  exchange(upstream: string, calls: readonly { trace?: CallTrace }[]): Attempt {
    const links: SpanRecord[] = [];
    for (const c of calls) {
      if (c.trace === undefined) continue;
      c.trace.attempts++;
      links.push(c.trace.span);
    }
    return this.attempt(this.root, upstream, links, calls.length);
  }

  /** A CLIENT span under span `parent` for one attempt with `upstream`. */
  attempt(parent: SpanRecord, upstream: string, links?: SpanRecord[], calls?: number): Attempt {
    const span = this.record(
      'upstream',
      SpanKind.CLIENT,
      parent,
      calls === undefined
        ? { 'switchyard.upstream': upstream }
        : { 'switchyard.upstream': upstream, 'switchyard.calls': calls },
      links,
    );
    return new Attempt(this, span, traceparentOf(this.traceId, span.spanId, this.head));
  }

  /** Something went wrong on the way (a failed attempt, a call's error): the trace is exported. */
  markFailed(): void {
    this.failed = true;
  }

  /** Each call's outcome, as the request answers it: the spans made so far end; the others are made at export. */
  answered(outcomes: readonly (Outcome | undefined)[]): void {
    this.outcomes = outcomes;
    const calls = this.calls;
    // Only spans already made are ended now; the clock is read for them alone (end() for the others).
    if (calls !== null) this.answeredAt = performance.now();
    for (let i = 0; i < outcomes.length; i++) {
      const o = outcomes[i];
      if (o === undefined) continue;
      calls?.[i]?.end(o, this.answeredAt);
      // An error fails the trace, a call with no span yet (a refusal, an invalid call) as well.
      if (o.result === undefined) this.failed = true;
    }
  }

  /**
   * The request is answered: the trace's fate is decided, and the SERVER span (and the spans of
   * calls that had none yet) made and ended when it is exported. The answer's `traceparent`: the
   * SERVER span, flagged sampled when the trace is exported. `now`: the caller's clock reading,
   * when it has one.
   */
  end(status: number, errors: number, calls: number | null, now = performance.now()): string {
    const keep = this.head || this.failed || errors > 0 || status >= 400 || now - this.start >= this.rt.slowMs;
    const header = traceparentOf(this.traceId, this.rootSpanId, keep);
    if (this.ended) return header;
    this.ended = true;
    // A trace let go is not read again: only a kept one's spans are ended.
    if (keep) this.spans(status, errors, calls, now);
    this.rt.tracing.tail.settle(this, this.records ?? NO_RECORDS, this.overflow, keep);
    return header;
  }

  /** A kept trace's SERVER span, and a span for every call taken up, ended. */
  private spans(status: number, errors: number, calls: number | null, now: number): void {
    const root = this.root;
    for (let i = 0; i < this.taken.length; i++) {
      const c = this.callTrace(i);
      const o = this.outcomes?.[i];
      if (c !== undefined && o !== undefined) c.end(o, this.answeredAt === 0 ? now : this.answeredAt);
      // Calls cut short (a crash) end with the request, so no span is left open.
      c?.close(now);
    }
    const a = root.attributes;
    if (this.http !== undefined) root.name = httpServerAttributes(this.http, status, a);
    else a['http.response.status_code'] = status;
    if (calls !== null) a['switchyard.calls'] = calls;
    if (errors > 0) a['switchyard.errors'] = errors;
    if (this.directives !== undefined) a['switchyard.directives'] = this.directives;
    if (status >= 500) root.failed = true;
    root.close(now);
  }
}

export class CallTrace {
  attempts = 0;
  cache: CacheUse = 'none';
  block: number | undefined = undefined;

  constructor(
    private readonly owner: RequestTrace,
    readonly span: SpanRecord,
  ) {}

  /** A CLIENT span for one attempt of this call alone, under the call's span. */
  attempt(upstream: string): Attempt {
    this.attempts++;
    return this.owner.attempt(this.span, upstream);
  }

  end(o: Outcome, at?: number): void {
    if (this.span.end !== 0) return;
    const a = this.span.attributes;
    a['switchyard.cache'] = o.result !== undefined && o.cached === true ? 'hit' : this.cache;
    a['switchyard.attempts'] = this.attempts;
    if (this.block !== undefined) a['switchyard.block'] = this.block;
    if (o.result === undefined) {
      const code = o.error !== undefined ? o.error.code : nodeErrorCode(o.nodeError);
      a['error.type'] = o.error !== undefined ? o.error.reason : code === null ? 'node_error' : String(code);
      if (code !== null) a['rpc.response.status_code'] = String(code);
      this.span.failed = true;
      this.owner.markFailed();
    }
    this.close(at);
  }

  close(at?: number): void {
    this.span.close(at);
  }
}

/** One upstream attempt (or exchange): its CLIENT span and the traceparent the node is sent. */
export class Attempt {
  constructor(
    private readonly owner: RequestTrace,
    private readonly span: SpanRecord,
    readonly traceparent: string,
  ) {}

  /** The attempt is a hedge (routing/hedge.ts): a second node asked while the first was still out. */
  hedge(): void {
    this.span.attributes['switchyard.hedge'] = true;
  }

  /**
   * The node's verdict: `result`, `node-error`, or why the call goes elsewhere. A hedged read's
   * loser, cancelled once the other answered, is no failure of the request.
   */
  end(verdict: Verdict): void {
    const outcome = verdict.kind === 'retry' ? verdict.reason : verdict.kind;
    this.span.attributes['switchyard.outcome'] = outcome;
    if (verdict.kind !== 'result' && outcome !== 'cancelled') {
      this.span.failed = true;
      this.span.attributes['error.type'] = outcome;
      this.owner.markFailed();
    }
    this.span.close();
  }

  /** An exchange's verdicts: the span's outcome is the first that is not a result, else `result`. */
  endMany(verdicts: readonly Verdict[]): void {
    const failed = verdicts.find((v) => v.kind !== 'result');
    this.end(failed ?? verdicts[0] ?? { kind: 'result', result: 'null' });
  }
}

function callAttributes(call: Call, known: boolean): Record<string, string> {
  const a: Record<string, string> = { 'rpc.system.name': 'jsonrpc', 'rpc.method': known ? call.method : '_OTHER' };
  if (!known) a['rpc.method_original'] = call.method.slice(0, MAX_METHOD_CHARS);
  const id = requestId(call.id);
  if (id !== undefined) a['jsonrpc.request.id'] = id;
  return a;
}

/** The id as the client wrote it (a string without its quotes); none for a notification or a null id. */
function requestId(raw: string | undefined): string | undefined {
  if (raw === undefined || raw === 'null') return undefined;
  let id = raw;
  if (raw.startsWith('"')) {
    try {
      id = String(JSON.parse(raw));
    } catch {
      return undefined;
    }
  }
  return id.slice(0, MAX_ID_CHARS);
}

/** The code of a node's error object text; null when it has none a number. */
function nodeErrorCode(text: string): number | null {
  const m = /"code"\s*:\s*(-?\d{1,9})\b/.exec(text);
  return m === null ? null : Number(m[1]);
}
