/**
 * Cordons on the admin port (SPEC 4.8): GET /upstreams (each upstream's name, state and cordon),
 * POST /upstreams/{name}/cordon (optional JSON body {"reason": "..."}), POST /upstreams/{name}/uncordon.
 * Writes follow the admin port's rules (admin.ts: a Host the port answers, a JSON content type).
 * A name the configuration does not have is 404; a stored cordon of such a name (the upstream was
 * removed by a reload) is listed as ignored and can still be lifted.
 * Owns: the routes, their input and answers. Refuses: keeping cordons (upstream/cordons.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { MAX_REASON, type Cordon, type Cordons } from '../upstream/cordons.js';
import type { Fleet } from '../upstream/fleet.js';
import { isJsonContentType, readBody } from './body.js';
import { sendJson } from './json-reply.js';

/** A body bigger than this is not a reason. */
const MAX_BODY_BYTES = 4_096;
const WRITE = /^\/upstreams\/([^/]+)\/(cordon|uncordon)$/;

export function isCordonPath(path: string): boolean {
  return path === '/upstreams' || path.startsWith('/upstreams/');
}

/** A cordon as the status pages show it. */
export function cordonLine(c: Cordon | undefined): { reason: string | null; since: string } | null {
  return c === undefined ? null : { reason: c.reason, since: new Date(c.at).toISOString() };
}

/** Answers a request under /upstreams. */
export function cordonRoute(
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  fleet: Fleet,
  cordons: Cordons | undefined,
): void {
  if (cordons === undefined) {
    req.resume();
    return sendJson(res, 404, { error: 'cordons not available' });
  }
  if (path === '/upstreams') {
    req.resume();
    if (req.method !== 'GET') return sendJson(res, 405, { error: 'use GET' });
    return sendJson(res, 200, listUpstreams(fleet, cordons));
  }
  const m = WRITE.exec(path);
  if (m === null) {
    req.resume();
    return sendJson(res, 404, { error: 'not found', paths: ['/upstreams', 'POST /upstreams/{name}/cordon|uncordon'] });
  }
  if (req.method !== 'POST') {
    req.resume();
    return sendJson(res, 405, { error: 'use POST' });
  }
  if (!isJsonContentType(req.headers['content-type'])) {
    req.resume();
    return sendJson(res, 415, { error: 'admin writes need Content-Type: application/json' });
  }
  let name: string;
  try {
    name = decodeURIComponent(m[1]!);
  } catch {
    name = '';
  }
  if (m[2] === 'uncordon') {
    req.resume();
    return void uncordon(res, name, fleet, cordons);
  }
  readBody(req, MAX_BODY_BYTES, (body) => {
    if (!body.ok) {
      req.resume();
      return sendJson(res, body.why === 'too_large' ? 413 : 400, { error: `body refused: ${body.why}` });
    }
    const reason = reasonOf(body.text);
    if (typeof reason === 'object' && reason !== null) return sendJson(res, 400, reason);
    void cordon(res, name, reason, fleet, cordons);
  });
}

/** The reason from an optional body: null without one, or the problem as an answer. */
function reasonOf(text: string): string | null | { error: string } {
  if (text.trim() === '') return null;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return { error: 'expected a JSON body {"reason": "..."} or none' };
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    return { error: 'expected a JSON object {"reason": "..."}' };
  const extra = Object.keys(v).filter((k) => k !== 'reason');
  if (extra.length > 0) return { error: `unknown key ${JSON.stringify(extra[0])}: only "reason" is read` };
  const { reason } = v as { reason?: unknown };
  if (reason === undefined || reason === null) return null;
  if (typeof reason !== 'string' || reason.length > MAX_REASON)
    return { error: `expected reason to be a string of at most ${MAX_REASON} characters` };
  return reason;
}

async function cordon(
  res: ServerResponse,
  name: string,
  reason: string | null,
  fleet: Fleet,
  cordons: Cordons,
): Promise<void> {
  if (!fleet.upstreams.some((u) => u.name === name)) return unknown(res, name);
  try {
    const c = await cordons.cordon(name, reason);
    sendJson(res, 200, { name, cordoned: true, cordon: cordonLine(c), keptIn: cordons.keeper.keptIn });
  } catch (err) {
    notKept(res, err);
  }
}

async function uncordon(res: ServerResponse, name: string, fleet: Fleet, cordons: Cordons): Promise<void> {
  const configured = fleet.upstreams.some((u) => u.name === name);
  if (!configured && cordons.get(name) === undefined) return unknown(res, name);
  try {
    const was = await cordons.uncordon(name);
    sendJson(res, 200, { name, cordoned: false, wasCordoned: was, keptIn: cordons.keeper.keptIn });
  } catch (err) {
    notKept(res, err);
  }
}

function unknown(res: ServerResponse, name: string): void {
  sendJson(res, 404, { error: `no upstream named ${JSON.stringify(name.slice(0, 64))} in the configuration` });
}

/** Where cordons are kept refused the change (Redis unreachable, the store failing): nothing changed. */
function notKept(res: ServerResponse, err: unknown): void {
  sendJson(res, 503, { error: `not changed: ${(err as Error).message}; try again` });
}

/** GET /upstreams: each configured upstream with its state and cordon; stored cordons of other names, ignored. */
export function listUpstreams(fleet: Fleet, cordons: Cordons): Record<string, unknown> {
  const names = new Set(fleet.upstreams.map((u) => u.name));
  const ignored = [...cordons.all()]
    .filter(([name]) => !names.has(name))
    .map(([name, c]) => ({ name, ...cordonLine(c), why: 'no upstream of this name in the configuration' }));
  return {
    keptIn: cordons.keeper.keptIn,
    upstreams: fleet.upstreams.map((u) => {
      const c = cordons.get(u.name);
      return { name: u.name, state: c ? 'cordoned' : u.state, probeState: u.state, cordon: cordonLine(c) };
    }),
    ignoredCordons: ignored,
  };
}
