/**
 * One traced request: its SERVER span (an HTTP request or a WebSocket frame), a span per JSON-RPC
 * call in it (OpenTelemetry's JSON-RPC conventions), a CLIENT span per upstream attempt, and one
 * CLIENT span per exchange of several calls with a node, linking each call's span. Attributes name
 * methods, ids, codes, cache use, attempts, the pinned block and upstreams by name; never params,
 * results, addresses, URLs, keys or tokens. When the request ends, whether its spans are exported
 * is decided (tail.ts): a sampled parent or the head sample, a request slower than tracing.slowMs,
 * or any error (a call's, a failed attempt's, or an HTTP error status).
 */
import type { Attributes, SpanContext } from '@opentelemetry/api';
import type { Call } from '../jsonrpc/parse.js';
import type { Outcome } from '../jsonrpc/response.js';
import type { Verdict } from '../upstream/classify.js';
import { isSampled, traceparentOf } from './context.js';
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

/** A traced request; null when tracing is off or too many requests are traced at once. */
export function startTrace(
  rt: RequestTracing | null | undefined,
  transport: 'http' | 'websocket',
  parent: SpanContext | null,
): RequestTrace | null {
  if (rt === null || rt === undefined || !rt.tracing.tail.begin()) return null;
  const head = parent !== null ? isSampled(parent) : Math.random() < rt.sampleRate;
  return new RequestTrace(rt, parent, head, transport);
}

export class RequestTrace implements TraceOf {
  readonly traceId: string;
  private failed = false;
  private readonly calls: (CallTrace | undefined)[] = [];
  private ended = false;
  /** The SERVER span; the request's other spans are recorded in `records` after it. */
  readonly root: SpanRecord;
  private readonly records: SpanRecord[];
  private overflow = 0;

  constructor(
    private readonly rt: RequestTracing,
    /** The client's span (from its traceparent), the SERVER span's parent; null: a trace of our own. */
    readonly remote: SpanContext | null,
    /** The head decision: a sampled parent, the sample at tracing.sampleRate, or force(). */
    public head: boolean,
    transport: 'http' | 'websocket',
  ) {
    let rootSpanId: string;
    if (remote === null) ({ traceId: this.traceId, rootSpanId } = newTraceIds());
    else {
      this.traceId = remote.traceId;
      rootSpanId = newSpanId();
    }
    this.root = new SpanRecord(
      transport === 'http' ? 'POST' : 'websocket frame',
      SpanKind.SERVER,
      null,
      { 'network.protocol.name': transport },
      undefined,
      rootSpanId,
    );
    this.records = [this.root];
  }

  /** A span recorded in this trace, unless the trace holds MAX_SPANS_PER_TRACE already (then only counted). */
  record(name: string, kind: SpanKind, parent: SpanRecord, attributes: Attributes, links?: SpanRecord[]): SpanRecord {
    const r = new SpanRecord(name, kind, parent, attributes, links);
    if (this.records.length < MAX_SPANS_PER_TRACE) this.records.push(r);
    else this.overflow++;
    return r;
  }

  /** X-Switchyard-Trace: force (server/directives.ts): recorded and exported whatever the sample. */
  force(): void {
    this.head = true;
  }

  /** A span for the call in slot `slot`, under the SERVER span. */
  call(slot: number, call: Call, label: string): CallTrace {
    const known = label !== 'other';
    const c = new CallTrace(
      this,
      this.record(known ? call.method : '_OTHER', SpanKind.INTERNAL, this.root, callAttributes(call, known)),
    );
    this.calls[slot] = c;
    return c;
  }

  /**
   * The call in slot `slot` goes to a node under `plan`: the cache level it may fill, the block
   * `latest` was pinned to, and the plan carries the call's span to routing.
   */
  planned(slot: number, call: Call, plan: PlanView): void {
    const c = this.calls[slot];
    if (c === undefined) return;
    c.cache = plan.cache === null ? 'none' : 'miss';
    const at = plan.spec.block;
    if (at !== undefined && (call.params[at] === 'latest' || call.params[at] === undefined)) {
      const v = plan.params[at];
      if (typeof v === 'string' && /^0x[0-9a-f]{1,13}$/i.test(v)) c.block = Number.parseInt(v, 16);
    }
    plan.trace = c;
  }

  /** The call span of slot `slot`, when it has one. */
  at(slot: number): CallTrace | undefined {
    return this.calls[slot];
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

  /** Each call's outcome, as the request answers it: its span ends. */
  answered(outcomes: readonly (Outcome | undefined)[]): void {
    for (let i = 0; i < this.calls.length; i++) {
      const o = outcomes[i];
      if (o !== undefined) this.calls[i]?.end(o);
    }
  }

  /**
   * The request is answered: the SERVER span ends and the trace's fate is decided. The answer's
   * `traceparent`: the SERVER span, flagged sampled when the trace is exported.
   */
  end(status: number, errors: number, calls: number | null): string {
    const root = this.root;
    const now = performance.now();
    const keep = this.head || this.failed || errors > 0 || status >= 400 || now - root.start >= this.rt.slowMs;
    const header = traceparentOf(this.traceId, root.spanId, keep);
    if (this.ended) return header;
    this.ended = true;
    // Calls cut short (a crash) end with the request, so no span is left open.
    for (const c of this.calls) c?.close();
    root.attributes['http.response.status_code'] = status;
    if (calls !== null) root.attributes['switchyard.calls'] = calls;
    if (errors > 0) root.attributes['switchyard.errors'] = errors;
    if (status >= 500) root.failed = true;
    root.close(now);
    this.rt.tracing.tail.settle(this, this.records, this.overflow, keep);
    return header;
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

  end(o: Outcome): void {
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
    this.close();
  }

  close(): void {
    this.span.close();
  }
}

/** One upstream attempt (or exchange): its CLIENT span and the traceparent the node is sent. */
export class Attempt {
  constructor(
    private readonly owner: RequestTrace,
    private readonly span: SpanRecord,
    readonly traceparent: string,
  ) {}

  /** The node's verdict: `result`, `node-error`, or why the call goes elsewhere. */
  end(verdict: Verdict): void {
    const outcome = verdict.kind === 'retry' ? verdict.reason : verdict.kind;
    this.span.attributes['switchyard.outcome'] = outcome;
    if (verdict.kind !== 'result') {
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
