/**
 * What the public port answers for the uptime paths: GET /uptime (the page), GET /uptime/parts
 * (the page's sections the script does not have yet: ?have= lists the hashes it has; 304 when its
 * If-None-Match names them all), GET /uptime.json (its machine twin, CORS open to any origin: it
 * is public; an ETag and 304 too), GET /uptime/api/v2/status.json and summary.json (Statuspage's
 * shape, statuspage.ts), GET /uptime/badge.svg, GET /uptime/feed.atom (feed.ts), and the page for
 * a browser's GET / (Accept names text/html). HEAD works on each. Cache lifetimes follow the probe
 * interval, so a CDN or browser in front never shows a result older than one more probe.
 */
import { createHash } from 'node:crypto';
import type { UptimeReport } from '../view.js';
import { renderBadge } from './badge.js';
import { feedBase, feedEntries, renderFeed } from '../notify/feed.js';
import { PAGE_CSP, pageParts, partsEtag, renderPage, renderParts } from './page.js';
import { incidentAnswer, type IncidentPages } from './routes-incidents.js';
import { statusJson, summaryJson } from './statuspage.js';
import type { SupportConfig } from '../../config/support.js';

export interface UptimePages {
  report(): UptimeReport | null;
  /** 30-day uptime for the badge, null when the page's data rule says too little is known (figures.ts); works before the first probe. */
  uptime30d(): number | null;
  readonly title: string;
  readonly probeIntervalMs: number;
  /** uptime.support: the "Report a problem" section (absent or null: none). */
  readonly support?: SupportConfig | null;
  /** The incident pages (SPEC 12.2); absent: those paths are not served. */
  readonly desk?: IncidentPages;
  /** uptime.publicUrl: the base of the feed's links (else the request's Host). */
  readonly publicUrl?: string | null;
}

export interface UptimeAnswer {
  status: number;
  body: string;
  headers: Record<string, string>;
}

/** A browser asking for a page: Accept names text/html (curl and JSON-RPC clients do not). */
export function wantsHtml(accept: string | string[] | undefined): boolean {
  const text = Array.isArray(accept) ? accept.join(',') : (accept ?? '');
  return /\btext\/html\b/i.test(text);
}

const COMMON = { 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer' };

/** The answer for an uptime path (`url`: the path and query), or null when the path is not one (the caller goes on). */
export function uptimeAnswer(
  pages: UptimePages,
  url: string,
  headers: { accept?: string | string[]; host?: string; 'if-none-match'?: string },
  now = Date.now(),
): UptimeAnswer | null {
  const [path = '/', query = ''] = url.split('?', 2);
  const maxAge = Math.max(1, Math.floor(pages.probeIntervalMs / 1000));
  if (path === '/uptime' || (path === '/' && wantsHtml(headers.accept))) return pageAnswer(pages, path, now, maxAge);
  if (path === '/uptime/parts') return partsAnswer(pages.report(), query, headers['if-none-match']);
  if (path === '/uptime/api/v2/status.json' || path === '/uptime/api/v2/summary.json') {
    const report = pages.report();
    const base = feedBase(pages.publicUrl, headers.host) ?? '';
    if (report === null) return notYet();
    const body = path.endsWith('status.json') ? statusJson(report, base) : summaryJson(report, base);
    return jsonAnswer(JSON.stringify(body), headers['if-none-match'], maxAge);
  }
  if (path === '/uptime.json') {
    const report = pages.report();
    if (report === null) return notYet();
    return jsonAnswer(JSON.stringify(report), headers['if-none-match'], maxAge);
  }
  if (path === '/uptime/feed.atom') return feedAnswer(pages, headers.host, maxAge);
  if (path === '/uptime/badge.svg') return badgeAnswer(pages);
  if (pages.desk && path.startsWith('/uptime/incidents')) return incidentAnswer(pages.desk, pages, path, query, now);
  return null;
}

const CORS = { 'access-control-allow-origin': '*' };

/** The page itself, for GET /uptime and a browser's GET /. */
function pageAnswer(pages: UptimePages, path: string, now: number, maxAge: number): UptimeAnswer {
  return {
    status: 200,
    body: renderPage(pages.report(), pages.title, pages.support ?? null, now, pages.probeIntervalMs),
    headers: {
      ...COMMON,
      'content-type': 'text/html; charset=utf-8',
      'cache-control': `public, max-age=${maxAge}`,
      'content-security-policy': PAGE_CSP,
      // `/` answers HTML or JSON by Accept: a shared cache must keep the two apart.
      ...(path === '/' ? { vary: 'Accept' } : {}),
    },
  };
}

function badgeAnswer(pages: UptimePages): UptimeAnswer {
  return {
    status: 200,
    body: renderBadge(pages.uptime30d()),
    headers: {
      ...COMMON,
      'content-type': 'image/svg+xml; charset=utf-8',
      'cache-control': 'public, max-age=300',
      'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'",
    },
  };
}

function notYet(): UptimeAnswer {
  return {
    status: 503,
    body: JSON.stringify({ error: 'no probe has finished yet' }),
    headers: {
      ...COMMON,
      ...CORS,
      'content-type': 'application/json',
      'cache-control': 'no-store',
      'retry-after': '1',
    },
  };
}

/** Whether If-None-Match names `etag` (or is *). */
function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  return ifNoneMatch.split(',').some((t) => {
    const v = t.trim().replace(/^W\//, '');
    return v === etag || v === '*';
  });
}

/** Public JSON with an ETag of its bytes: a client that has them gets a 304 and no body. */
function jsonAnswer(body: string, ifNoneMatch: string | undefined, maxAge: number): UptimeAnswer {
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
  const headers = {
    ...COMMON,
    ...CORS,
    'content-type': 'application/json',
    'cache-control': `public, max-age=${maxAge}`,
    etag,
  };
  return matches(ifNoneMatch, etag) ? { status: 304, body: '', headers } : { status: 200, body, headers };
}

/** At most this many hashes are read from ?have= (the page has ten sections). */
const MAX_HAVE = 32;

/**
 * The page's sections whose hash is not in ?have= (the script's), as HTML to swap in by id; 304
 * when If-None-Match is the ETag of every section as they are now (nothing changed). Not cached
 * by others: the answer depends on the query the script built.
 */
function partsAnswer(report: UptimeReport | null, query: string, ifNoneMatch: string | undefined): UptimeAnswer {
  const headers = { ...COMMON, 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache' };
  if (report === null) return { status: 503, body: '', headers: { ...headers, 'retry-after': '1' } };
  const etag = partsEtag(pageParts(report));
  if (matches(ifNoneMatch, etag)) return { status: 304, body: '', headers: { ...headers, etag } };
  const have = new URLSearchParams(query).get('have') ?? '';
  const hashes = new Set(have.split('.', MAX_HAVE).filter((h) => /^[A-Za-z0-9_-]{1,32}$/.test(h)));
  return { status: 200, body: renderParts(report, hashes), headers: { ...headers, etag } };
}

function feedAnswer(pages: UptimePages, host: string | undefined, maxAge: number): UptimeAnswer {
  const report = pages.report();
  const base = feedBase(pages.publicUrl, host);
  if (report === null || base === null) {
    const why = base === null ? 'no Host header naming a host: set uptime.publicUrl' : 'no probe has finished yet';
    return {
      status: base === null ? 400 : 503,
      body: `${why}\n`,
      headers: {
        ...COMMON,
        'content-type': 'text/plain; charset=utf-8',
        'cache-control': 'no-store',
        ...(base === null ? {} : { 'retry-after': '1' }),
      },
    };
  }
  const entries = feedEntries(report.incidents, report.maintenance ?? [], report.chainId);
  const body = renderFeed(entries, {
    title: report.title,
    chainId: report.chainId,
    base,
    publicUrl: pages.publicUrl,
    now: report.checkedAt,
  });
  return {
    status: 200,
    body,
    headers: {
      ...COMMON,
      'content-type': 'application/atom+xml; charset=utf-8',
      'cache-control': `public, max-age=${maxAge}`,
    },
  };
}
