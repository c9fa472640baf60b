/**
 * Reading a node's answer body into verdicts: the HTTP status, the JSON (parsed, read on a fast
 * path for the compact shape nearly every node answers in, or read from the spans a large answer
 * was checked into as it arrived), the id a single call's answer must carry, and a batch answer's
 * elements matched to their calls by id. Each result stays the raw text the node wrote.
 * Refuses: what a node's error or a transport failure means (classify.ts) and what to do about it
 * (routing/verdict.ts, routing/failover.ts).
 */
import { objectMembers, skipValue, skipWs, type Span } from '../jsonrpc/scan.js';
import { classifyNodeError, TOO_MANY_REQUESTS, type Verdict } from './classify.js';
import type { LargeBody } from './large-answer.js';

/**
 * The verdict on the answer to one call sent alone; `id`: the id it was sent with, which the
 * answer must carry (an error may carry null: JSON-RPC 2.0 answers so when the id could not be
 * read). An answer with another id is another call's: a bad body, tried elsewhere.
 * `large`: a large answer, checked as it arrived (large-answer.ts): classified from its spans,
 * never given to JSON.parse, its result kept as bytes.
 */
export function classifyHttp(status: number, body: string, id?: number, large?: LargeBody | null): Verdict {
  if (large !== undefined) {
    const failed = statusVerdict(status) ?? (large === null ? badBody(status) : undefined);
    if (failed !== undefined) return failed;
    const checked = large!.checked;
    if (checked.kind !== 'object' || (id !== undefined && !membersCarryId(large!, checked.members, id)))
      return { kind: 'retry', reason: 'bad_body', health: true };
    return fromMembers(large!, checked.members, checked.inner);
  }
  const read = parseAnswer(status, body);
  if ('kind' in read) return read;
  if (id !== undefined && !carriesId(read.parsed, id)) return { kind: 'retry', reason: 'bad_body', health: true };
  return classifyResponse(body, { start: 0, end: body.length }, read.parsed);
}

/** carriesId for an answer read as spans: its id's text is `id`, or null beside an error. */
function membersCarryId(body: LargeBody, members: Map<string, Span>, id: number): boolean {
  const at = members.get('id');
  // Longer than any id Switchyard sends: not read.
  if (at === undefined || at.end - at.start > 20) return false;
  const text = body.text(at);
  return text === String(id) || (text === 'null' && members.has('error') && !isNullAt(body, members.get('error')!));
}

function isNullAt(body: LargeBody, at: Span): boolean {
  return at.end - at.start === 4 && body.text(at) === 'null';
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
export function classifyBatch(
  status: number,
  body: string,
  large?: LargeBody | null,
): Map<number, Verdict> | Verdict | null {
  const out = new Map<number, Verdict>();
  const read = readBatch(
    status,
    body,
    large,
    (id, verdict) => void out.set(id, verdict),
    () => out.clear(),
  );
  return read === undefined ? out : read;
}

/**
 * classifyBatch for a batch whose ids run from `first` to `first + n - 1`: the verdicts in that
 * order (a call the answer left out gets `missing`), with no table by id.
 */
export function classifyBatchInOrder(
  status: number,
  body: string,
  first: number,
  n: number,
  missing: Verdict,
  large?: LargeBody | null,
): Verdict[] | Verdict | null {
  const out: Verdict[] = new Array(n).fill(missing);
  const visit = (id: number, verdict: Verdict): void => {
    const k = id - first;
    if (k >= 0 && k < n) out[k] = verdict;
  };
  const read = readBatch(status, body, large, visit, () => out.fill(missing));
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
  large: LargeBody | null | undefined,
  visit: (id: number, verdict: Verdict) => void,
  restart: () => void,
): Verdict | null | undefined {
  if (large !== undefined) {
    const failed = statusVerdict(status) ?? (large === null ? badBody(status) : undefined);
    if (failed !== undefined) return failed;
    const checked = large!.checked;
    if (checked.kind !== 'array') return null;
    for (const el of checked.elements) {
      const idSpan = el.members.get('id');
      const id = idSpan === undefined || idSpan.end - idSpan.start > 15 ? -1 : positiveId(large!.text(idSpan));
      if (id >= 0) visit(id, fromMembers(large!, el.members, el.inner));
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

/**
 * The shape nearly every node answers in: compact, members in this order, result last. Matched at
 * the start of a response (the text is valid JSON: JSON.parse read it), it finds the result's text
 * without walking the object's members one by one.
 */
const PLAIN_ANSWER = /\{"jsonrpc":"2\.0","id":-?\d+,"result":/y;

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

function positiveId(text: string): number {
  return positiveInt(text, 0, text.length);
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
      visit(
        id,
        plain !== null && isAnswer(el)
          ? resultOf(body.slice(plain.start, plain.end), (el as { result?: unknown }).result)
          : classifyResponse(body, { start: i, end }, el),
      );
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
  if (status === 429) return TOO_MANY_REQUESTS;
  if (status >= 500) return { kind: 'retry', reason: 'http_5xx', health: true };
  return undefined;
}

/**
 * A body that is no JSON-RPC answer, named by its status: a 404 is most often a wrong path in the
 * node's URL (a provider's key left out), another 4xx a refusal (401/403: a key it does not take).
 */
function badBody(status: number): Verdict {
  const reason =
    status === 200
      ? 'bad_body'
      : status === 404
        ? 'http_404'
        : status >= 400 && status < 500
          ? 'http_4xx'
          : 'http_other';
  return { kind: 'retry', reason, health: true };
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
 * One response object of a large answer, from the spans of its members: its result as raw text
 * (a long one as its bytes, with the members of it `inner` names), or its error classified from the
 * error's own `code` and `message` (read alone, not the answer).
 */
function fromMembers(body: LargeBody, members: Map<string, Span>, inner: Map<string, Span>): Verdict {
  const at = members.get('error');
  if (at !== undefined && !isNullAt(body, at)) {
    const text = body.text(at);
    const errSpan = { start: 0, end: text.length };
    const parts = objectMembers(text, errSpan, ['code', 'message']);
    const codeSpan = parts.get('code');
    const msgSpan = parts.get('message');
    const code = codeSpan === undefined ? 0 : Number(text.slice(codeSpan.start, codeSpan.end));
    const message =
      msgSpan !== undefined &&
      text.charCodeAt(msgSpan.start) === 0x22 &&
      msgSpan.end - msgSpan.start <= MAX_READ_MESSAGE
        ? (JSON.parse(text.slice(msgSpan.start, msgSpan.end)) as string)
        : '';
    return classifyNodeError(text, Number.isFinite(code) ? code : 0, message);
  }
  const resSpan = members.get('result');
  if (resSpan === undefined) return { kind: 'retry', reason: 'bad_body', health: true };
  return { kind: 'result', result: body.value(resSpan, inner) };
}

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
      if (text.charCodeAt(end) === 0x7d && (end + 1 === span.end || text.slice(end + 1, span.end).trim() === ''))
        return resultOf(text.slice(start, end), obj.result);
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
  return resultOf(text.slice(resSpan.start, resSpan.end), obj.result);
}

/**
 * A result's verdict, with its parsed value where that is an object or an array (what verification
 * reads: routing/verified.ts): the parse that checked the answer is not made twice.
 */
function resultOf(text: string, value: unknown): Verdict {
  return typeof value === 'object' && value !== null
    ? { kind: 'result', result: text, value }
    : { kind: 'result', result: text };
}

/**
 * A whole exchange's answer was over maxResponseBytes, or cut off because the pool of large answers
 * was full (not one call's fault: each call is then judged by its own answer).
 */
export function tooLarge(read: Verdict | Verdict[] | Map<number, Verdict>): boolean {
  return (
    !(read instanceof Map) &&
    !Array.isArray(read) &&
    read.kind === 'retry' &&
    (read.reason === 'response_too_large' || read.reason === 'answers_busy')
  );
}
