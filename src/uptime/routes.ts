/**
 * What the public port answers for the uptime paths: GET /uptime (the page), GET /uptime.json
 * (its machine twin, CORS open to any origin: it is public), GET /uptime/badge.svg, GET
 * /uptime/feed.atom (feed.ts), and the page for a browser's GET / (Accept names text/html). HEAD
 * works on each. Cache lifetimes follow the probe interval, so a CDN or browser in front never
 * shows a result older than one more probe.
 */
import type { UptimeReport } from './report.js';
import { renderBadge } from './badge.js';
import { feedBase, feedEntries, renderFeed } from './feed.js';
import { PAGE_CSP, renderPage } from './page.js';
import { incidentAnswer, type IncidentPages } from './routes-incidents.js';

export interface UptimePages {
  report(): UptimeReport | null;
  /** 30-day uptime for the badge (null without data); works before the first probe. */
  uptime30d(): number | null;
  readonly title: string;
  readonly probeIntervalMs: number;
  /** uptime.support: the "Report a problem" section (absent or null: none). */
  readonly support?: string | null;
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
  headers: { accept?: string | string[]; host?: string },
  now = Date.now(),
): UptimeAnswer | null {
  const [path = '/', query = ''] = url.split('?', 2);
  const maxAge = Math.max(1, Math.floor(pages.probeIntervalMs / 1000));
  if (path === '/uptime' || (path === '/' && wantsHtml(headers.accept))) {
    return {
      status: 200,
      body: renderPage(pages.report(), pages.title, pages.support ?? null, now),
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
  if (path === '/uptime.json') {
    const report = pages.report();
    const cors = { 'access-control-allow-origin': '*' };
    if (report === null) {
      return {
        status: 503,
        body: JSON.stringify({ error: 'no probe has finished yet' }),
        headers: {
          ...COMMON,
          ...cors,
          'content-type': 'application/json',
          'cache-control': 'no-store',
          'retry-after': '1',
        },
      };
    }
    return {
      status: 200,
      body: JSON.stringify(report),
      headers: { ...COMMON, ...cors, 'content-type': 'application/json', 'cache-control': `public, max-age=${maxAge}` },
    };
  }
  if (path === '/uptime/feed.atom') return feedAnswer(pages, headers.host, maxAge);
  if (path === '/uptime/badge.svg') {
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
  if (pages.desk && path.startsWith('/uptime/incidents')) return incidentAnswer(pages.desk, pages, path, query, now);
  return null;
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
