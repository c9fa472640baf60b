/**
 * Incidents told by people, on the admin port (SPEC 12.2; the write rules of SPEC 9 are judged
 * before routing, admin-writes.ts):
 *   POST /uptime/incidents               {"title", "status", "message", "impact"?}  opens one by hand (201)
 *   POST /uptime/incidents/{id}/updates  {"status", "message", "impact"?}           adds an update (201)
 *   PUT  /uptime/incidents/{id}/postmortem  Markdown (Content-Type: text/markdown)  attaches a post-mortem
 *   GET  /uptime/incidents/{id}          the incident as stored, post-mortem text included
 * `impact` is none, minor, major or critical (SPEC 12.3; default minor when opened, unchanged
 * when an update leaves it out; a probe's incident keeps the impact of its kind).
 * POST bodies are JSON (415 otherwise, as every admin write). The post-mortem is Markdown, not
 * JSON: a PUT is never a request a page of another site can send without a CORS preflight (which
 * this port never grants), so the content type is not what guards it here; it must still say
 * text/markdown (415 otherwise), so a client sending JSON by mistake is told.
 * Owns: the routes and judging their input. Refuses: keeping incidents (uptime/incidents.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  IMPACTS,
  isImpact,
  isUpdateStatus,
  MAX_MESSAGE,
  MAX_POSTMORTEM_BYTES,
  MAX_TITLE,
  UPDATE_STATUSES,
  type DeskResult,
  type Impact,
  type IncidentDesk,
  type IncidentRecord,
  type UpdateStatus,
} from '../uptime/view.js';
import { isJsonContentType, readBody } from './body.js';
import { sendJson } from './json-reply.js';

/** A JSON body of a title and a message at their longest, escaped (\uXXXX) throughout, fits. */
const MAX_JSON_BYTES = 16_384;
const ONE = /^\/uptime\/incidents\/([^/]+)(?:\/(updates|postmortem))?$/;

export function isIncidentPath(path: string): boolean {
  return path === '/uptime/incidents' || path.startsWith('/uptime/incidents/');
}

type Desk = Pick<IncidentDesk, 'open' | 'update' | 'postmortem' | 'get'>;

/** Answers a request under /uptime/incidents. */
export function incidentRoute(req: IncomingMessage, res: ServerResponse, path: string, desk: Desk | undefined): void {
  const done = (status: number, body: Record<string, unknown>): void => {
    req.resume();
    sendJson(res, status, body);
  };
  if (desk === undefined) return done(404, { error: 'the uptime page is off (uptime.enabled: false)' });
  if (path === '/uptime/incidents') {
    if (req.method !== 'POST') return done(405, { error: 'use POST' });
    return json(req, res, ['title', 'status', 'message', 'impact'], (v) => {
      const title = text(v.title, 'title', MAX_TITLE);
      if (typeof title !== 'string') return title;
      return withUpdate(v, (status, message, impact) => desk.open(title, status, message, impact));
    });
  }
  const m = ONE.exec(path);
  const id = m === null ? NaN : Number(m[1]);
  if (m === null || !/^[1-9][0-9]{0,14}$/.test(m[1]!))
    return done(404, {
      error: 'not found',
      paths: ['POST /uptime/incidents', '/uptime/incidents/{id}/updates|postmortem'],
    });
  if (m[2] === undefined) {
    if (req.method !== 'GET') return done(405, { error: 'use GET' });
    const r = desk.get(id);
    return r === null ? done(404, { error: `no incident ${id}` }) : done(200, recordJson(r, true));
  }
  if (m[2] === 'updates') {
    if (req.method !== 'POST') return done(405, { error: 'use POST' });
    return json(req, res, ['status', 'message', 'impact'], (v) =>
      withUpdate(v, (s, msg, impact) => desk.update(id, s, msg, impact)),
    );
  }
  if (req.method !== 'PUT') return done(405, { error: 'use PUT' });
  if (!/^text\/(x-)?markdown\s*(;|$)/i.test(req.headers['content-type'] ?? ''))
    return done(415, { error: 'a post-mortem is Markdown: send it with Content-Type: text/markdown' });
  readBody(req, MAX_POSTMORTEM_BYTES, (body) => {
    if (!body.ok) return refusedBody(req, res, body.why, MAX_POSTMORTEM_BYTES);
    if (body.text.trim() === '') return sendJson(res, 400, { error: 'the post-mortem is empty' });
    answer(res, desk.postmortem(id, body.text), 200);
  });
}

type Answer = { status: number; body: Record<string, unknown> };

/** Reads a JSON object of exactly these keys (some may be absent) and answers what `use` makes of it. */
function json(
  req: IncomingMessage,
  res: ServerResponse,
  keys: string[],
  use: (v: Record<string, unknown>) => Answer | DeskResult,
): void {
  if (!isJsonContentType(req.headers['content-type'])) {
    req.resume();
    return sendJson(res, 415, { error: 'admin writes need Content-Type: application/json' });
  }
  readBody(req, MAX_JSON_BYTES, (body) => {
    if (!body.ok) return refusedBody(req, res, body.why, MAX_JSON_BYTES);
    let v: unknown;
    try {
      v = JSON.parse(body.text);
    } catch {
      return sendJson(res, 400, { error: `expected a JSON object with ${keys.join(', ')}` });
    }
    if (typeof v !== 'object' || v === null || Array.isArray(v))
      return sendJson(res, 400, { error: `expected a JSON object with ${keys.join(', ')}` });
    const extra = Object.keys(v).find((k) => !keys.includes(k));
    if (extra !== undefined)
      return sendJson(res, 400, {
        error: `unknown key ${JSON.stringify(extra.slice(0, 64))}: only ${keys.join(', ')}`,
      });
    const r = use(v as Record<string, unknown>);
    if (r !== null && 'status' in r && 'body' in r) return sendJson(res, r.status, r.body);
    answer(res, r, 201);
  });
}

function withUpdate(
  v: Record<string, unknown>,
  write: (s: UpdateStatus, message: string, impact: Impact | undefined) => DeskResult,
): Answer | DeskResult {
  if (v.impact !== undefined && !isImpact(v.impact))
    return {
      status: 400,
      body: { error: `expected impact to be one of ${IMPACTS.join(', ')}`, allowed: IMPACTS },
    };
  if (!isUpdateStatus(v.status))
    return {
      status: 400,
      body: { error: `expected status to be one of ${UPDATE_STATUSES.join(', ')}`, allowed: UPDATE_STATUSES },
    };
  const message = text(v.message, 'message', MAX_MESSAGE);
  if (typeof message !== 'string') return message;
  return write(v.status, message, v.impact);
}

/** A required, non-blank string of at most `max` characters, or the 400 saying so. */
function text(v: unknown, name: string, max: number): string | Answer {
  if (typeof v !== 'string' || v.trim() === '' || v.length > max)
    return { status: 400, body: { error: `expected ${name} to be a non-empty string of at most ${max} characters` } };
  return v.trim();
}

function answer(res: ServerResponse, r: DeskResult, ok: number): void {
  if (r === null) return sendJson(res, 503, { error: 'not changed: the uptime store failed; try again' });
  if ('refused' in r) return sendJson(res, r.refused === 'unknown' ? 404 : 409, { error: r.why });
  sendJson(res, ok, recordJson(r, false));
}

function refusedBody(req: IncomingMessage, res: ServerResponse, why: string, max: number): void {
  req.resume();
  if (why === 'too_large') return sendJson(res, 413, { error: `body refused: too_large (at most ${max} bytes)` });
  sendJson(res, 400, { error: `body refused: ${why}` });
}

/** The incident as the admin port answers it; the post-mortem's text only when asked for it. */
function recordJson(r: IncidentRecord, withText: boolean): Record<string, unknown> {
  const iso = (t: number): string => new Date(t).toISOString();
  return {
    id: r.id,
    kind: r.kind,
    source: r.source,
    impact: r.impact,
    summary: r.summary,
    startedAt: iso(r.startedAt),
    endedAt: r.endedAt === null ? null : iso(r.endedAt),
    updates: r.updates.map((u) => ({ status: u.status, message: u.message, at: iso(u.at) })),
    postmortem:
      r.postmortem === null ? null : { at: iso(r.postmortem.at), ...(withText && { markdown: r.postmortem.markdown }) },
    page: `/uptime/incidents/${r.id}`,
  };
}
