/**
 * The one place that decides what an upstream's answer means for routing.
 * Owns: turning (transport outcome, HTTP status, body) into a verdict: an answer to return, or a
 * failure to retry elsewhere (and whether it counts against the node's health).
 * Refuses: retry policy itself (routing/failover.ts) and breaker bookkeeping (upstream/health.ts).
 */
import type { Checked } from '../jsonrpc/check.js';
import { objectMembers, skipValue, skipWs, type Span } from '../jsonrpc/scan.js';

export type Verdict =
  /** A usable answer: `result` raw text. */
  | { kind: 'result'; result: string }
  /** A node error that is the answer (execution reverted, nonce too low, invalid params...). */
  | { kind: 'node-error'; error: string; code: number; message: string }
  /**
   * The node can't serve this call right now: try another; `health` says if the node itself is
   * failing. `unsent`: the request never left (the connection could not be made). `final`: the
   * call must not run on another node, and says nothing about this one (an expensive call's
   * timeout: client.ts).
   */
  | { kind: 'retry'; reason: RetryReason; health: boolean; error?: string; unsent?: true; final?: true };

/**
 * Retry reasons after which a call moves on to another node (switchyard_failovers_total's `reason`).
 * The other two end the call at once: every node would send the same oversized answer, and another
 * node's large answer would find the pool as full.
 */
export const FAILOVER_REASONS = ['transport', 'timeout', 'http_5xx', 'http_429', 'http_other', 'bad_body', 'node_limit', 'node_method_missing', 'node_missing_block'] as const;

export type RetryReason =
  | 'response_too_large'
  /** The process's pool of large answers being received was full (upstream/answer-bytes.ts). */
  | 'answers_busy'
  | (typeof FAILOVER_REASONS)[number];

/** Node error messages meaning "I don't have that block (yet)", not "it doesn't exist". */
const MISSING_BLOCK = /header not found|unknown block|block not found|BlockOutOfRange|block number out of range|missing trie node/i;

/**
 * The verdict on the answer to one call sent alone; `id`: the id it was sent with, which the
 * answer must carry (an error may carry null: JSON-RPC 2.0 answers so when the id could not be
 * read). An answer with another id is another call's: a bad body, tried elsewhere.
 * `checked`: a large answer, checked as it arrived (jsonrpc/check.ts): classified from its spans,
 * never given to JSON.parse.
 */
export function classifyHttp(status: number, body: string, id?: number, checked?: Checked | null): Verdict {
  if (checked !== undefined) {
    const failed = statusVerdict(status) ?? (checked === null ? badBody(status) : undefined);
    if (failed !== undefined) return failed;
    if (checked!.kind !== 'object' || (id !== undefined && !membersCarryId(body, checked!.members, id))) return { kind: 'retry', reason: 'bad_body', health: true };
    return fromMembers(body, checked!.members);
  }
  const read = parseAnswer(status, body);
  if ('kind' in read) return read;
  if (id !== undefined && !carriesId(read.parsed, id)) return { kind: 'retry', reason: 'bad_body', health: true };
  return classifyResponse(body, { start: 0, end: body.length }, read.parsed);
}

/** carriesId for an answer read as spans: its id's text is `id`, or null beside an error. */
function membersCarryId(body: string, members: Map<string, Span>, id: number): boolean {
  const at = members.get('id');
  if (at === undefined) return false;
  const text = body.slice(at.start, at.end);
  return text === String(id) || (text === 'null' && members.has('error') && !isNullAt(body, members.get('error')!));
}

function isNullAt(body: string, at: Span): boolean {
  return body.slice(at.start, at.end) === 'null';
}

/** Whether a parsed single answer carries `id` (a body of another shape is judged by classifyResponse). */
function carriesId(parsed: unknown, id: number): boolean {
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return true;
  const o = parsed as { id?: unknown; error?: unknown };
  return o.id === id || (o.id === null && o.error !== undefined && o.error !== null);
}

/**
 * Verdicts for a batch sent as one request, by request id; null when the body is not a JSON array
 * (a node that refuses batches answers with one error object: the calls are then sent one by one).
 */
export function classifyBatch(status: number, body: string, checked?: Checked | null): Map<number, Verdict> | Verdict | null {
  const out = new Map<number, Verdict>();
  const read = readBatch(
    status,
    body,
    checked,
    (id, verdict) => void out.set(id, verdict),
    () => out.clear(),
  );
  return read === undefined ? out : read;
}

/**
 * classifyBatch for a batch whose ids run from `first` to `first + n - 1`: the verdicts in that
 * order (a call the answer left out gets `missing`), with no table by id.
 */
export function classifyBatchInOrder(status: number, body: string, first: number, n: number, missing: Verdict, checked?: Checked | null): Verdict[] | Verdict | null {
  const out: Verdict[] = new Array(n).fill(missing);
  const visit = (id: number, verdict: Verdict): void => {
    const k = id - first;
    if (k >= 0 && k < n) out[k] = verdict;
  };
  const read = readBatch(status, body, checked, visit, () => out.fill(missing));
  return read === undefined ? out : read;
}

/**
 * Visits each element of a batch answer with a numeric id, and its verdict: read without JSON.parse
 * when every element is plain (readPlainBatch), else parsed, after `restart` forgets what the plain
 * reading visited. Undefined when visited; the verdict when the status or the body says the node
 * failed; null when the body is not a JSON array.
 */
function readBatch(
  status: number,
  body: string,
  checked: Checked | null | undefined,
  visit: (id: number, verdict: Verdict) => void,
  restart: () => void,
): Verdict | null | undefined {
  if (checked !== undefined) {
    const failed = statusVerdict(status) ?? (checked === null ? badBody(status) : undefined);
    if (failed !== undefined) return failed;
    if (checked!.kind !== 'array') return null;
    for (const el of checked!.elements) {
      const idSpan = el.members.get('id');
      const id = idSpan === undefined ? -1 : positiveInt(body, idSpan.start, idSpan.end);
      if (id >= 0) visit(id, fromMembers(body, el.members));
    }
    return undefined;
  }
  if (status === 200 && readPlainBatch(body, visit)) return undefined;
  const read = parseAnswer(status, body);
  if ('kind' in read) return read;
  if (!Array.isArray(read.parsed)) return null;
  restart();
  walkBatch(body, read.parsed, visit);
  return undefined;
}

/** A control character or a backslash: text holding one is left to JSON.parse. */
const CONTROL_OR_ESCAPE = /[\x00-\x1f\\]/;
const ID_AT = '{"jsonrpc":"2.0","id":'.length;
const RESULT_KEY = ',"result":'.length;

/**
 * A batch answer made only of plain elements, read without JSON.parse: a compact array of
 * `{"jsonrpc":"2.0","id":N,"result":R}` where N is a positive integer and R a string without
 * escapes or control characters, true, false or null (what nodes answer to balance, nonce, code,
 * storage and receipt-hash reads). Each element's id and result are visited in order. Any other
 * text, valid or not, is false (whatever was visited is then read again by the JSON.parse path): the
 * text accepted here is exactly JSON of that shape, so nothing JSON.parse would refuse gets through.
 */
function readPlainBatch(body: string, visit: (id: number, verdict: Verdict) => void): boolean {
  if (body.charCodeAt(0) !== 0x5b) return false;
  // Outside the array only trailing whitespace may hold one (geth ends its answers with a newline).
  const bad = body.search(CONTROL_OR_ESCAPE);
  let i = 1;
  for (;;) {
    PLAIN_ANSWER.lastIndex = i;
    if (!PLAIN_ANSWER.test(body)) return false;
    const from = PLAIN_ANSWER.lastIndex;
    const id = positiveInt(body, i + ID_AT, from - RESULT_KEY);
    if (id < 0) return false;
    let end: number;
    const c = body.charCodeAt(from);
    if (c === 0x22) {
      end = body.indexOf('"', from + 1) + 1;
      if (end === 0) return false;
    } else if (c === 0x74 && body.startsWith('true', from)) end = from + 4;
    else if (c === 0x66 && body.startsWith('false', from)) end = from + 5;
    else if (c === 0x6e && body.startsWith('null', from)) end = from + 4;
    else return false;
    if (body.charCodeAt(end) !== 0x7d) return false;
    visit(id, { kind: 'result', result: body.slice(from, end) });
    const next = body.charCodeAt(end + 1);
    if (next === 0x2c) {
      i = end + 2;
      continue;
    }
    if (next !== 0x5d) return false;
    return (bad < 0 || bad > end + 1) && skipWs(body, end + 2) === body.length;
  }
}

/** The integer written in body[from, to): digits only, no leading zero, at most 15 of them; else -1. */
function positiveInt(body: string, from: number, to: number): number {
  if (to - from > 15 || body.charCodeAt(from) === 0x30) return -1;
  let n = 0;
  for (let i = from; i < to; i++) {
    const d = body.charCodeAt(i) - 0x30;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return to > from ? n : -1;
}

/** Each element of a parsed batch answer with a numeric id, and its verdict: one walk over the text. */
function walkBatch(body: string, parsed: unknown[], visit: (id: number, verdict: Verdict) => void): void {
  // A plain answer's end is found from its result; other elements are skipped whole.
  let i = skipWs(body, skipWs(body, 0) + 1); // past '['
  for (const el of parsed) {
    const plain = plainResult(body, i);
    const end = plain === null ? skipValue(body, i) : plain.end + 1;
    const id = (el as { id?: unknown } | null)?.id;
    if (typeof id === 'number') {
      visit(id, plain !== null && isAnswer(el) ? { kind: 'result', result: body.slice(plain.start, plain.end) } : classifyResponse(body, { start: i, end }, el));
    }
    i = skipWs(body, skipWs(body, end) + 1); // past ','
  }
}

/** A parsed element with no error member (its result, if the plain shape matched, is its answer). */
function isAnswer(el: unknown): boolean {
  return el !== null && typeof el === 'object' && (el as { error?: unknown }).error === undefined;
}

/**
 * The span of the result of the plain-shaped answer starting at `start`, when the object closes
 * right after it (so the result is its last member); null for any other shape.
 */
function plainResult(text: string, start: number): Span | null {
  PLAIN_ANSWER.lastIndex = start;
  if (!PLAIN_ANSWER.test(text)) return null;
  const from = PLAIN_ANSWER.lastIndex;
  const end = skipValue(text, from);
  return text.charCodeAt(end) === 0x7d ? { start: from, end } : null;
}

/** The verdict when the HTTP status alone says the node failed. */
function statusVerdict(status: number): Verdict | undefined {
  if (status === 429) return { kind: 'retry', reason: 'http_429', health: true };
  if (status >= 500) return { kind: 'retry', reason: 'http_5xx', health: true };
  return undefined;
}

function badBody(status: number): Verdict {
  return { kind: 'retry', reason: status === 200 ? 'bad_body' : 'http_other', health: true };
}

/** The body as JSON, or the verdict when the status or the body already says the node failed. */
function parseAnswer(status: number, body: string): { parsed: unknown } | Verdict {
  const failed = statusVerdict(status);
  if (failed !== undefined) return failed;
  try {
    return { parsed: JSON.parse(body) as unknown };
  } catch {
    return badBody(status);
  }
}

/** A node error's message longer than this is not read for its meaning (it is still passed on verbatim). */
const MAX_READ_MESSAGE = 64 * 1024;

/**
 * One response object of a checked answer, from the spans of its members: its result as raw text,
 * or its error classified from the error's own `code` and `message` (read alone, not the answer).
 */
function fromMembers(text: string, members: Map<string, Span>): Verdict {
  const errSpan = members.get('error');
  if (errSpan !== undefined && text.slice(errSpan.start, errSpan.end) !== 'null') {
    const parts = objectMembers(text, errSpan, ['code', 'message']);
    const codeSpan = parts.get('code');
    const msgSpan = parts.get('message');
    const code = codeSpan === undefined ? 0 : Number(text.slice(codeSpan.start, codeSpan.end));
    const message =
      msgSpan !== undefined && text.charCodeAt(msgSpan.start) === 0x22 && msgSpan.end - msgSpan.start <= MAX_READ_MESSAGE
        ? (JSON.parse(text.slice(msgSpan.start, msgSpan.end)) as string)
        : '';
    return classifyNodeError(text.slice(errSpan.start, errSpan.end), Number.isFinite(code) ? code : 0, message);
  }
  const resSpan = members.get('result');
  if (resSpan === undefined) return { kind: 'retry', reason: 'bad_body', health: true };
  return { kind: 'result', result: text.slice(resSpan.start, resSpan.end) };
}

/**
 * The shape nearly every node answers in: compact, members in this order, result last. Matched at
 * the start of a response (the text is valid JSON: JSON.parse read it), it finds the result's text
 * without walking the object's members one by one.
 */
const PLAIN_ANSWER = /\{"jsonrpc":"2\.0","id":-?\d+,"result":/y;

/** One JSON-RPC response object at `span` of `text`, already parsed as `parsed`. */
function classifyResponse(text: string, span: Span, parsed: unknown): Verdict {
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    return { kind: 'retry', reason: 'bad_body', health: true };
  }
  const obj = parsed as { result?: unknown; error?: unknown };
  if (obj.error === undefined) {
    PLAIN_ANSWER.lastIndex = span.start;
    if (PLAIN_ANSWER.test(text)) {
      const start = PLAIN_ANSWER.lastIndex;
      const end = skipValue(text, start);
      // The result is the last member only if the object closes right after its value.
      if (text.charCodeAt(end) === 0x7d && (end + 1 === span.end || text.slice(end + 1, span.end).trim() === '')) return { kind: 'result', result: text.slice(start, end) };
    }
  }
  const raw = objectMembers(text, span, ['result', 'error']);
  const errSpan = raw.get('error');
  if (errSpan !== undefined && obj.error !== null && obj.error !== undefined) {
    const error = text.slice(errSpan.start, errSpan.end);
    const e = obj.error as { code?: unknown; message?: unknown };
    const code = typeof e.code === 'number' ? e.code : 0;
    const message = typeof e.message === 'string' ? e.message : '';
    return classifyNodeError(error, code, message);
  }
  const resSpan = raw.get('result');
  if (resSpan === undefined) return { kind: 'retry', reason: 'bad_body', health: true };
  return { kind: 'result', result: text.slice(resSpan.start, resSpan.end) };
}

/**
 * An execution revert, as the clients say it: code 3 (geth, erigon, reth, anvil, nethermind and
 * besu today), or an older client's generic code with a message that starts with its revert words
 * (geth's -32000 "execution reverted" with no data, besu's -32000 "Execution reverted",
 * nethermind's -32015 "VM execution error." / "Reverted", hardhat's "VM Exception"). Only the
 * start is read: what follows is the contract's reason, text the caller chose.
 */
const REVERT_START = /^(?:execution reverted|reverted|vm execution error|error: vm exception|vm exception)/i;
const REVERT_CODES: ReadonlySet<number> = new Set([-32000, -32015, -32603]);

export function isRevert(code: number, message: string): boolean {
  return code === 3 || (REVERT_CODES.has(code) && REVERT_START.test(message));
}

export function classifyNodeError(error: string, code: number, message: string): Verdict {
  // A revert is the call's own answer, the same from every node: returned at once, verbatim,
  // never a health signal. Its message holds the contract's reason ("rate limit", "header not
  // found"), so no pattern below may read it.
  if (isRevert(code, message)) return { kind: 'node-error', error, code, message };
  // -32005 is EIP-1474's "limit exceeded": the node is overloaded, not the call wrong.
  if (code === -32005 || /rate limit|too many requests/i.test(message)) {
    return { kind: 'retry', reason: 'node_limit', health: true, error };
  }
  if (code === -32601) return { kind: 'retry', reason: 'node_method_missing', health: false, error };
  if (MISSING_BLOCK.test(message)) return { kind: 'retry', reason: 'node_missing_block', health: false, error };
  return { kind: 'node-error', error, code, message };
}

/** Transport errors raised before the request left: the node never saw the call. */
const NOT_SENT: ReadonlySet<string> = new Set(['ECONNREFUSED', 'UND_ERR_CONNECT_TIMEOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

export function classifyTransport(err: unknown): Verdict {
  const name = (err as { name?: string; code?: string } | null)?.name ?? '';
  const code = (err as { code?: string } | null)?.code ?? '';
  const timedOut = name === 'TimeoutError' || name === 'AbortError' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT';
  // Over upstreams[].maxResponseBytes: the answer, not the node, is the problem (routing/failover.ts stops).
  if (code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE') return { kind: 'retry', reason: 'response_too_large', health: false };
  // Switchyard's own pool of large answers was full: nothing to say about the node, nor the call.
  if (code === 'SWITCHYARD_ANSWERS_BUSY') return { kind: 'retry', reason: 'answers_busy', health: false };
  if (timedOut) return { kind: 'retry', reason: 'timeout', health: true };
  return NOT_SENT.has(code) ? { kind: 'retry', reason: 'transport', health: true, unsent: true } : { kind: 'retry', reason: 'transport', health: true };
}

/**
 * What an expensive call's failure means (methods/table.ts `expensive`): a timeout, or a
 * connection lost once the request was sent, leaves the node possibly still running it, and the
 * next node would only run it again (or fall over the same way). So the verdict is final and no
 * health signal: the call's own cost, not the node's failing. Anything else is as for any call.
 */
export function expensiveVerdict(v: Verdict): Verdict {
  if (v.kind !== 'retry' || !(v.reason === 'timeout' || (v.reason === 'transport' && v.unsent !== true))) return v;
  return { kind: 'retry', reason: v.reason, health: false, final: true };
}
