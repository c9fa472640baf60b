/**
 * Body text -> calls. A single request is a batch of one; every element gets a slot, and order comes
 * from the slot index, never from ids. Ids stay raw text from here to the writer.
 * Owns: JSON-RPC 2.0 request validation. Refuses: method policy, limits, routing.
 */
import { CATALOGUE, RpcError, rpcErrors } from './errors.js';
import { own } from './own.js';
import { arrayElements, balancedEnd, nestingDepthExceeds, objectAt, skipValue, skipWs } from './scan.js';

/**
 * A valid call. `id` is the raw JSON text of the id (a copy that owns its characters, never a view
 * of the body), or undefined for a notification.
 */
export interface Call {
  index: number;
  id: string | undefined;
  method: string;
  params: unknown[];
  /** The exact JSON text of `params` as it arrived, when it was present. */
  paramsText?: string;
  /**
   * `params` was present but not an array. Judged after the method policy, so an unknown method is
   * reported as unknown (-32601) before its params are (-32602), as JSON-RPC 2.0's examples and geth do.
   */
  paramsNotArray?: true;
}

/** One element of the request: a call to work on, or an error already decided for its slot. */
export type Slot = { call: Call; error?: undefined } | { call?: undefined; id: string; error: RpcError };

export type ParsedBody =
  | { kind: 'calls'; batch: boolean; slots: Slot[] }
  /** The whole body is answered by one error object, not an array (parse error, empty batch). */
  | { kind: 'error'; error: RpcError; status: number; asArray: boolean };

/**
 * Depth rule: each request object may nest at most MAX_NESTING levels of arrays and objects,
 * counting itself as level 1; the batch array around it does not count. A deeper request gets
 * -32600 in its own slot with its own id (the id is read by the iterative scanner, whatever lies
 * below it), and the rest of a batch goes on. A body that is not JSON is -32700 at any depth.
 */
export const MAX_NESTING = 64;
/**
 * Bodies at least this long are scanned for depth before JSON.parse, which builds every level of a
 * hostile nesting first: a 5 MB `[[[...]]]` cost ~750 ms of event loop. Measured on the 2-core
 * build host: JSON.parse of a 16 KiB `[[...]]` takes 0.7-0.85 ms, so below this length a hostile
 * body costs under ~1 ms and only the in-place rule runs (an ordinary small call pays nothing).
 * The scan stops at the first level too many: ~0.02 ms on a 33 KB batch of 100 calls, and the 5 MB
 * `[[[...]]]` is answered in ~50 ms instead of ~1.2 s.
 */
export const DEPTH_PRESCAN_MIN_LENGTH = 16_384;
export const MAX_METHOD_LENGTH = 128;
/** The members whose raw text is kept (the others are read from the parsed object). */
const MEMBERS = ['id', 'params'] as const;

export function parseBody(text: string, maxBatchSize: number): ParsedBody {
  // One more level than a request may have: the batch array around the requests does not count.
  if (text.length >= DEPTH_PRESCAN_MIN_LENGTH && nestingDepthExceeds(text, MAX_NESTING + 1))
    return parseTooDeep(text, maxBatchSize);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { kind: 'error', error: new RpcError('PARSE_ERROR'), status: 200, asArray: false };
  }
  if (!Array.isArray(value)) {
    return { kind: 'calls', batch: false, slots: [toSlot(text, skipWs(text, 0), value, 0).slot] };
  }
  if (value.length === 0) {
    return { kind: 'error', error: new RpcError('EMPTY_BATCH'), status: 200, asArray: false };
  }
  if (value.length > maxBatchSize) {
    const error = rpcErrors.batchTooLarge(value.length, maxBatchSize);
    return { kind: 'error', error, status: CATALOGUE.BATCH_TOO_LARGE.http, asArray: true };
  }
  // One pass over the text: each element's members are found on the way to its end.
  const slots: Slot[] = new Array(value.length);
  let i = skipWs(text, skipWs(text, 0) + 1); // past '['
  for (let k = 0; k < value.length; k++) {
    const { slot, end } = toSlot(text, i, value[k], k);
    slots[k] = slot;
    i = skipWs(text, skipWs(text, end) + 1); // past ','
  }
  return { kind: 'calls', batch: true, slots };
}

/**
 * The shape nearly every client sends: compact, members in this order, an integer or plain string
 * id, params last. Matched at the start of a request (JSON.parse has validated the text), it finds
 * the id and params text without walking the members one by one. The id's quotes exclude `"`, so
 * the id ends where `,"method":` begins; the method has no escape, so the parsed name is its text.
 */
const PLAIN_CALL = /\{"jsonrpc":"2\.0","id":(?:-?\d+|"[^"\\]*"),"method":"[^"\\]*","params":/y;
const ID_AT = '{"jsonrpc":"2.0","id":'.length;

/** The slot for the element that starts at `start` (parsed as `value`), and the index just past it. */
function toSlot(text: string, start: number, value: unknown, index: number): { slot: Slot; end: number } {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { slot: { id: 'null', error: new RpcError('INVALID_REQUEST') }, end: skipValue(text, start) };
  }
  PLAIN_CALL.lastIndex = start;
  if (PLAIN_CALL.test(text)) {
    const paramsStart = PLAIN_CALL.lastIndex;
    const paramsEnd = skipValue(text, paramsStart);
    // Params are the last member only if the object closes right after their value.
    if (text.charCodeAt(paramsEnd) === 0x7d) {
      const idStart = start + ID_AT;
      const end = paramsEnd + 1;
      return {
        slot: checkCall(
          text,
          start,
          end,
          value as Record<string, unknown>,
          idStart,
          text.indexOf(',"method":', idStart),
          paramsStart,
          paramsEnd,
          index,
          true,
        ),
        end,
      };
    }
  }
  const { members: raw, end } = objectAt(text, start, MEMBERS);
  const id = raw.get('id');
  const params = raw.get('params');
  return {
    slot: checkCall(
      text,
      start,
      end,
      value as Record<string, unknown>,
      id?.start ?? -1,
      id?.end ?? -1,
      params?.start ?? -1,
      params?.end ?? -1,
      index,
      false,
    ),
    end,
  };
}

/**
 * The request at start..end, parsed as `obj`; the raw id and params text at their offsets (-1:
 * absent). `plain`: it has PLAIN_CALL's shape, whose members before params hold no array or object.
 */
function checkCall(
  text: string,
  start: number,
  end: number,
  obj: Record<string, unknown>,
  idStart: number,
  idEnd: number,
  paramsStart: number,
  paramsEnd: number,
  index: number,
  plain: boolean,
): Slot {
  let id: string | undefined;
  if (idStart >= 0) {
    const idValue = obj.id;
    // An object or array id cannot be echoed meaningfully: the request is invalid and its id null.
    if (idValue !== null && typeof idValue !== 'string' && typeof idValue !== 'number') {
      return {
        id: 'null',
        error: new RpcError('INVALID_REQUEST', { message: 'invalid request: id must be a string, number or null' }),
      };
    }
    // The id outlives the body in the answer (an answer waiting its turn on a socket): a slice of
    // a 4 MiB body would keep all of it alive.
    id = own(text.slice(idStart, idEnd));
  }
  const echo = id ?? 'null';
  // A plain request's other members are a string or a number: it is one level deeper than its
  // params, which are shorter (a block hash's call is 130 characters, its params 76). Judging the
  // params spares most calls the scan, a sixth of a cache hit's cost in process.
  const tooDeep = plain
    ? nestsDeeper(text, paramsStart, paramsEnd, MAX_NESTING - 1)
    : nestsDeeper(text, start, end, MAX_NESTING);
  if (tooDeep) return { id: echo, error: new RpcError('TOO_DEEP') };
  if (obj.jsonrpc !== '2.0') {
    return { id: echo, error: new RpcError('INVALID_REQUEST', { message: 'invalid request: jsonrpc must be "2.0"' }) };
  }
  if (typeof obj.method !== 'string' || obj.method.length === 0) {
    return {
      id: echo,
      error: new RpcError('INVALID_REQUEST', { message: 'invalid request: method must be a non-empty string' }),
    };
  }
  // No method name is this long; refusing it here also keeps it out of error messages and logs.
  if (obj.method.length > MAX_METHOD_LENGTH) {
    return {
      id: echo,
      error: new RpcError('INVALID_REQUEST', {
        message: `invalid request: method name longer than ${MAX_METHOD_LENGTH} characters`,
      }),
    };
  }
  if (obj.params === undefined) return { call: { index, id, method: obj.method, params: [] } };
  if (!Array.isArray(obj.params)) return { call: { index, id, method: obj.method, params: [], paramsNotArray: true } };
  const paramsText = paramsStart < 0 ? undefined : text.slice(paramsStart, paramsEnd);
  return { call: { index, id, method: obj.method, params: obj.params, paramsText } };
}

/**
 * Whether the value at start..end nests deeper than `limit` levels. Deeper takes more than twice as
 * many characters: a shorter value is told without a scan (nor a span made for it).
 */
function nestsDeeper(text: string, start: number, end: number, limit: number): boolean {
  return end - start >= 2 * (limit + 1) && nestingDepthExceeds(text, limit, { start, end });
}

const NOT_JSON: ParsedBody = { kind: 'error', error: new RpcError('PARSE_ERROR'), status: 200, asArray: false };

/**
 * A long body nested deeper than any request may be, answered as the depth rule answers, without
 * JSON.parse of the too-deep values: a single request gets -32600 TOO_DEEP; in a batch each element
 * is judged by its own depth, and only the elements within the limit are parsed (and worked on).
 * The too-deep values are checked only for balanced brackets, so broken JSON inside them gets the
 * depth error rather than -32700.
 */
function parseTooDeep(text: string, maxBatchSize: number): ParsedBody {
  const start = skipWs(text, 0);
  const open = text.charCodeAt(start);
  if (open === 0x7b) {
    const end = balancedEnd(text, start);
    if (end < 0 || skipWs(text, end) !== text.length) return NOT_JSON;
    const slot = tooDeepSlot(text, start);
    return slot === null ? NOT_JSON : { kind: 'calls', batch: false, slots: [slot] };
  }
  if (open !== 0x5b) return NOT_JSON;
  const spans = arrayElements(text);
  const last = spans[spans.length - 1];
  if (last === undefined) return NOT_JSON;
  const close = skipWs(text, last.end);
  if (text.charCodeAt(close) !== 0x5d || skipWs(text, close + 1) !== text.length) return NOT_JSON;
  if (spans.length > maxBatchSize) {
    return {
      kind: 'error',
      error: rpcErrors.batchTooLarge(spans.length, maxBatchSize),
      status: CATALOGUE.BATCH_TOO_LARGE.http,
      asArray: true,
    };
  }
  const slots: Slot[] = new Array(spans.length);
  for (let k = 0; k < spans.length; k++) {
    const span = spans[k]!;
    if (nestingDepthExceeds(text, MAX_NESTING, span)) {
      if (balancedEnd(text, span.start) !== span.end) return NOT_JSON;
      const slot =
        text.charCodeAt(span.start) === 0x7b
          ? tooDeepSlot(text, span.start)
          : { id: 'null', error: new RpcError('INVALID_REQUEST') };
      if (slot === null) return NOT_JSON;
      slots[k] = slot;
      continue;
    }
    let value: unknown;
    try {
      value = JSON.parse(text.slice(span.start, span.end));
    } catch {
      return NOT_JSON;
    }
    slots[k] = toSlot(text, span.start, value, k).slot;
  }
  return { kind: 'calls', batch: true, slots };
}

/**
 * The slot of a too-deep request object at `start`, judged as checkCall judges it: an id that is not
 * a string, number or null makes it invalid with id null; otherwise TOO_DEEP with its id. Null when
 * the id is not JSON.
 */
function tooDeepSlot(text: string, start: number): Slot | null {
  const idSpan = objectAt(text, start, MEMBERS).members.get('id');
  if (idSpan === undefined) return { id: 'null', error: new RpcError('TOO_DEEP') };
  const idText = own(text.slice(idSpan.start, idSpan.end));
  const first = idText.charCodeAt(0);
  // An object or array id may itself be the deep part: never parsed, it is no id either way.
  let idValue: unknown = first === 0x7b || first === 0x5b ? {} : undefined;
  if (idValue === undefined) {
    try {
      idValue = JSON.parse(idText);
    } catch {
      return null;
    }
  }
  if (idValue !== null && typeof idValue !== 'string' && typeof idValue !== 'number') {
    return {
      id: 'null',
      error: new RpcError('INVALID_REQUEST', { message: 'invalid request: id must be a string, number or null' }),
    };
  }
  return { id: idText, error: new RpcError('TOO_DEEP') };
}
