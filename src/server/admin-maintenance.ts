/**
 * Maintenance windows on the admin port (SPEC 12.2): GET /uptime/maintenance lists every known
 * window (source `config` or `admin`, state upcoming, ongoing or over); POST /uptime/maintenance
 * with {"start", "end", "title"} adds one (201); DELETE /uptime/maintenance/{id} removes an
 * admin-made window that has not started, or ends an ongoing one now. Windows from
 * uptime.maintenance change only with the configuration (409 here).
 * Writes follow the admin port's rules (admin.ts: a Host the port answers, a JSON content type;
 * admin-writes.ts: the token or a loopback peer, refusals logged and counted) before reaching here.
 * Owns: the routes, their input and answers. Refuses: the windows themselves (uptime/maintenance.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { MaintenanceAdmin } from '../uptime/view.js';
import { isJsonContentType, readBody } from './body.js';
import { sendJson } from './json-reply.js';

/** A window's body is three short fields: anything bigger is not one. */
const MAX_BODY_BYTES = 4_096;
const ONE = /^\/uptime\/maintenance\/([^/]{1,64})$/;

export function isMaintenancePath(path: string): boolean {
  return path === '/uptime/maintenance' || path.startsWith('/uptime/maintenance/');
}

/** Answers a request under /uptime/maintenance; `windows` undefined: the uptime page is off. */
export function maintenanceRoute(
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  windows: MaintenanceAdmin | undefined,
): void {
  if (windows === undefined) {
    req.resume();
    return sendJson(res, 404, { error: 'maintenance windows need the uptime page (uptime.enabled)' });
  }
  const one = ONE.exec(path);
  if (path !== '/uptime/maintenance' && one === null) {
    req.resume();
    return sendJson(res, 404, {
      error: 'not found',
      paths: ['GET /uptime/maintenance', 'POST /uptime/maintenance', 'DELETE /uptime/maintenance/{id}'],
    });
  }
  if (req.method === 'GET' && one === null) {
    req.resume();
    return sendJson(res, 200, { maintenance: windows.list() });
  }
  const allowed = one === null ? 'POST' : 'DELETE';
  if (req.method !== allowed) {
    req.resume();
    return sendJson(res, 405, { error: one === null ? 'use GET or POST' : 'use DELETE' });
  }
  if (!isJsonContentType(req.headers['content-type'])) {
    req.resume();
    return sendJson(res, 415, { error: 'admin writes need Content-Type: application/json' });
  }
  if (one !== null) {
    req.resume();
    const r = windows.end(one[1]!);
    return 'error' in r ? sendJson(res, r.status, { error: r.error }) : sendJson(res, 200, r);
  }
  readBody(req, MAX_BODY_BYTES, (body) => {
    if (!body.ok) {
      req.resume();
      return sendJson(res, body.why === 'too_large' ? 413 : 400, { error: `body refused: ${body.why}` });
    }
    let v: unknown;
    try {
      v = JSON.parse(body.text);
    } catch {
      return sendJson(res, 400, { error: 'expected a JSON body {"start": "...", "end": "...", "title": "..."}' });
    }
    const r = windows.add(v);
    if ('error' in r) return sendJson(res, r.status, { error: r.error });
    sendJson(res, 201, r);
  });
}
