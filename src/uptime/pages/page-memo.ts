/**
 * The uptime paths' answers, each made at most once a second. Every reader sees the same page, and
 * the largest there is (50 incidents of 50 updates of 2,000 characters: a 5 MB uptime.json) costs
 * milliseconds to make: made per request, one client polling it within its rate budget held the
 * event loop for everyone (docs/uptime-page.md, Cost). A made answer is served to every request
 * for the same page within MEMO_MS, which the pages' own `cache-control` allows (max-age is the
 * probe interval, at least 1 s), unless the report changed meanwhile: a probe, an incident or an
 * update (a new incident list), a maintenance window added or ended shows at once.
 * The key is what the answer depends on: the path, the query only for the incident pages and the
 * page's parts, Accept only for `/`, and Host only for the feed and the Statuspage JSON.
 * If-None-Match is judged after: a made answer whose ETag the client names goes out as a 304 with
 * no body (the script's parts, uptime.json, the Statuspage JSON). What a client may vary freely (other query strings,
 * headers) does not make a new entry; at most MEMO_ENTRIES answers and MEMO_BYTES bytes are kept
 * (the oldest go first).
 */
import type { UptimeReport } from '../view.js';
import { uptimeAnswer, wantsHtml, type UptimeAnswer, type UptimePages } from './routes.js';

/** How long one made answer is served. */
export const MEMO_MS = 1_000;
/** Answers kept at once (the page, its JSON, the badge, the feed, incident pages). */
export const MEMO_ENTRIES = 32;
/** Bytes of answers kept at once, at most: the largest uptime.json (5 MB) and feed fit together. */
export const MEMO_BYTES = 16 * 1024 * 1024;

/** An uptime answer whose body may be bytes already encoded (a made one). */
export type ServedAnswer = Omit<UptimeAnswer, 'body'> & { body: string | Buffer };

interface Made {
  at: number;
  answer: ServedAnswer & { body: Buffer };
  /** The report it was made from, as far as a change to it is seen (see `same`). */
  from: Fingerprint;
}

interface Fingerprint {
  checkedAt: string | null;
  incidents: unknown;
  maintenance: string;
}

/** What tells a changed report: each probe's time, the incident list (a new array on any change), the windows. */
function fingerprint(report: UptimeReport | null): Fingerprint {
  if (report === null) return { checkedAt: null, incidents: null, maintenance: '' };
  return { checkedAt: report.checkedAt, incidents: report.incidents, maintenance: JSON.stringify(report.maintenance) };
}

function same(a: Fingerprint, b: Fingerprint): boolean {
  return a.checkedAt === b.checkedAt && a.incidents === b.incidents && a.maintenance === b.maintenance;
}

/** One pages' made answers, oldest first, and their bytes. */
interface Memo {
  made: Map<string, Made>;
  bytes: number;
}

const memos = new WeakMap<UptimePages, Memo>();

/** uptimeAnswer, made at most once per MEMO_MS for each page (only a 200 is kept). */
export function memoUptimeAnswer(
  pages: UptimePages,
  url: string,
  headers: { accept?: string | string[]; host?: string; 'if-none-match'?: string },
  now = Date.now(),
): ServedAnswer | null {
  const answer = madeAnswer(pages, url, { accept: headers.accept, host: headers.host }, now);
  const etag = answer?.headers.etag;
  if (answer === null || answer.status !== 200 || etag === undefined) return answer;
  const asked = headers['if-none-match'];
  if (asked === undefined || !asked.split(',').some((t) => t.trim().replace(/^W\//, '') === etag)) return answer;
  return { status: 304, body: '', headers: answer.headers };
}

function madeAnswer(
  pages: UptimePages,
  url: string,
  headers: { accept?: string | string[]; host?: string },
  now: number,
): ServedAnswer | null {
  const key = memoKey(url, headers);
  if (key === null) return null;
  let memo = memos.get(pages);
  if (memo === undefined) memos.set(pages, (memo = { made: new Map(), bytes: 0 }));
  const kept = memo.made.get(key);
  const from = fingerprint(pages.report());
  if (kept !== undefined && now - kept.at < MEMO_MS && now >= kept.at && same(kept.from, from)) return kept.answer;
  const answer = uptimeAnswer(pages, url, headers, now);
  forget(memo, key);
  if (answer === null || answer.status !== 200) return answer;
  // Encoded once: a 5 MB answer written as text is encoded again for every request.
  const made = { ...answer, body: Buffer.from(answer.body, 'utf8') };
  const size = made.body.length;
  if (size > MEMO_BYTES) return made;
  while (memo.made.size >= MEMO_ENTRIES || memo.bytes + size > MEMO_BYTES) forget(memo, memo.made.keys().next().value!);
  memo.made.set(key, { at: now, answer: made, from });
  memo.bytes += size;
  return made;
}

function forget(memo: Memo, key: string): void {
  const gone = memo.made.get(key);
  if (gone === undefined) return;
  memo.made.delete(key);
  memo.bytes -= gone.answer.body.length;
}

/** What the answer for `url` depends on; null for a path that is no uptime path. */
function memoKey(url: string, headers: { accept?: string | string[]; host?: string }): string | null {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  if (path === '/') return wantsHtml(headers.accept) ? '/' : null;
  if (path === '/uptime/feed.atom' || path.startsWith('/uptime/api/v2/')) return `${path}\n${headers.host ?? ''}`;
  if (path.startsWith('/uptime/incidents') || path === '/uptime/parts') return url;
  return path === '/uptime' || path === '/uptime.json' || path === '/uptime/badge.svg' ? path : null;
}
