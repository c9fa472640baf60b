/**
 * The admin port (127.0.0.1 by default): /health (process alive), /ready (serving, the first round of polls done, not draining;
 * upstreams only with admin.readyRequiresUpstream, or asked with ?upstreams=1), /status (the fleet as an operator reads it; names, never URLs),
 * /metrics (Prometheus), POST /-/reload (read the config file again, as SIGHUP does), and the
 * cordons under /upstreams (admin-cordons.ts), incidents told by people under /uptime/incidents
 * (admin-incidents.ts) and maintenance windows under /uptime/maintenance (admin-maintenance.ts).
 * Every request must come with a Host the port answers (admin-host.ts: 403 otherwise), and every
 * write with a JSON content type (415 otherwise): a browser page of another site may send a
 * "simple" request (text/plain, a form, no body) anywhere without asking, but a JSON one only
 * after a CORS preflight, which this port never grants. Every write must also pass admin-writes.ts
 * (the bearer admin.token when set, else a loopback peer), judged before routing.
 */
import { createServer, type Server } from 'node:http';
import type { Logger } from '../log/logger.js';
import type { Metrics } from '../metrics/registry.js';
import { cost } from '../routing/select.js';
import type { Cordons } from '../upstream/cordons.js';
import type { Fleet } from '../upstream/fleet.js';
import type { Upstream } from '../upstream/node.js';
import { cordonLine, cordonRoute, isCordonPath } from './admin-cordons.js';
import { incidentRoute, isIncidentPath } from './admin-incidents.js';
import type { IncidentDesk, MaintenanceAdmin } from '../uptime/view.js';
import { isMaintenancePath, maintenanceRoute } from './admin-maintenance.js';
import { stateReason } from './admin-reason.js';
import { servingLine } from './admin-serving.js';
import { adminHostAllowed } from './admin-host.js';
import { refuseWrite } from './admin-writes.js';
import { isJsonContentType } from './body.js';
import { sendJson } from './json-reply.js';
import { COMMIT } from '../version.js';

export interface AdminDeps {
  fleet: Fleet;
  metrics: Metrics;
  maxLagBlocks: number;
  isDraining: () => boolean;
  /** The fleet's first round of polls is not done yet (upstream/first-round.ts): /ready is 503. */
  isStarting: () => boolean;
  version: string;
  extraStatus?: () => Record<string, unknown>;
  /** Hedged reads a node's answer won (routing/hedge-figures.ts); absent: 0. */
  hedgesWon?: (u: Upstream) => number;
  /** Refreshes gauges owned by other rooms before a scrape. */
  collect?: () => void;
  /** POST /-/reload: reads the config file again (as SIGHUP does). */
  reload?: () => Promise<{ ok: true } | { ok: false; problems: string[] }>;
  /** admin.host: a name there is a Host the port answers. */
  host: string;
  /** admin.allowedHosts: further names the port answers ("*": any). */
  allowedHosts: readonly string[];
  /** The cordons (SPEC 4.8): GET /upstreams, POST /upstreams/{name}/cordon|uncordon. */
  cordons?: Cordons;
  /** Maintenance windows (SPEC 12.2): GET|POST /uptime/maintenance, DELETE /uptime/maintenance/{id}. */
  maintenance?: MaintenanceAdmin;
  /** admin.token: writes need it as a Bearer token; null = writes from loopback peers only. */
  token: string | null;
  /** admin.readyRequiresUpstream: /ready also needs a healthy, in-sync upstream. */
  readyRequiresUpstream: boolean;
  /** Refused writes are logged here at warn (admin-writes.ts). */
  log?: Logger;
  /** Incidents told by people (SPEC 12.2): under /uptime/incidents; absent with the uptime page off. */
  incidents?: IncidentDesk;
}

type ReadyDeps = Pick<AdminDeps, 'fleet' | 'maxLagBlocks' | 'isDraining' | 'isStarting' | 'readyRequiresUpstream'>;

/** Some upstream is healthy and within maxLagBlocks of the fleet head: what /ready?upstreams=1 asks. */
export function hasUpstream(deps: Pick<AdminDeps, 'fleet' | 'maxLagBlocks'>): boolean {
  return deps.fleet.upstreams.some((u) => u.available && !u.shadow && deps.fleet.lag(u) <= deps.maxLagBlocks);
}

/**
 * SPEC 8: serving, from the end of the fleet's first round of polls until it drains. Not tied to
 * the nodes by default: when every node is down, a balancer that took every replica out would
 * answer its own error page for everything, where each replica answers NO_UPSTREAM fast and keeps
 * the uptime page reachable. The first round ends as soon as each node answered or failed a poll.
 */
export function isReady(deps: ReadyDeps): boolean {
  if (deps.isDraining() || deps.isStarting()) return false;
  return !deps.readyRequiresUpstream || hasUpstream(deps);
}

/** GET /ready; with ?upstreams=1 the answer also needs an upstream, whatever admin.readyRequiresUpstream says. */
function readyAnswer(deps: ReadyDeps, url: string): { status: number; body: Record<string, boolean> } {
  const query = new URLSearchParams(url.split('?')[1] ?? '');
  const upstreams = hasUpstream(deps);
  const asked = query.get('upstreams') === '1' || query.get('upstreams') === 'true';
  const ready = isReady(deps) && (!asked || upstreams);
  return { status: ready ? 200 : 503, body: { ready, upstreams } };
}

export function statusOf(deps: AdminDeps): Record<string, unknown> {
  const { fleet } = deps;
  return {
    name: 'switchyard',
    version: deps.version,
    commit: COMMIT,
    ready: isReady(deps),
    draining: deps.isDraining(),
    fleetHead: fleet.head,
    finalized: fleet.finalized,
    blockNumber: fleet.blockNumber(),
    upstreams: fleet.upstreams.map((u) => ({
      name: u.name,
      state: fleet.cordons.has(u.name) ? 'cordoned' : u.state,
      reason: stateReason(u, {
        cordon: fleet.cordons.get(u.name),
        lag: fleet.lag(u),
        maxLagBlocks: deps.maxLagBlocks,
      }),
      probeState: u.state,
      quarantine:
        u.quarantineWhy === null
          ? null
          : {
              why: u.quarantineWhy,
              until: u.quarantinedUntil === null ? null : new Date(u.quarantinedUntil).toISOString(),
            },
      cordon: cordonLine(fleet.cordons.get(u.name)),
      routable: u.available && !fleet.cordons.has(u.name),
      // Gets copies of reads to compare and never a client's call (routing/shadow.ts); `routable` is for copies then.
      shadow: u.shadow,
      pollLate: u.late,
      implausibleHead: u.implausible,
      head: u.head,
      lag: Number.isFinite(fleet.lag(u)) ? fleet.lag(u) : null,
      latencyMs: Math.round(u.latencyMs * 100) / 100,
      inFlight: u.inFlight,
      weight: u.weight,
      tags: [...u.tags],
      calls: u.calls,
      failures: u.failures,
      errorRate: u.calls === 0 ? 0 : Math.round((u.failures / u.calls) * 10000) / 10000,
      breaker: u.breaker.state,
      heldOffUntil: u.heldOffUntil === null ? null : new Date(u.heldOffUntil).toISOString(),
      selectionCost: Math.round(cost(u) * 100) / 100,
      budget: u.budget?.status() ?? null,
      // Quorum reads (routing/quorum.ts): its group, and its answers that differed from the agreed one.
      group: u.group,
      dissent: u.dissent,
      // Verified answers (routing/verified.ts): its answers that failed verification since start.
      wrongAnswers: u.wrongAnswers,
      hedgesWon: deps.hedgesWon?.(u) ?? 0,
      ...servingLine(u),
    })),
    ...deps.extraStatus?.(),
  };
}

/** What a 404 on the admin port lists. */
const PATHS = [
  '/health',
  '/ready',
  '/status',
  '/metrics',
  '/upstreams',
  '/uptime/incidents',
  '/uptime/maintenance',
  'POST /-/reload',
];

export function createAdminServer(getDeps: () => AdminDeps): Server {
  return createServer((req, res) => {
    const deps = getDeps();
    const path = (req.url ?? '/').split('?', 1)[0] ?? '/';
    if (!adminHostAllowed(req.headers.host, deps.host, deps.allowedHosts)) {
      req.resume();
      return sendJson(res, 403, {
        error: 'Host not allowed on the admin port: use localhost, an IP address, or a name in admin.allowedHosts',
      });
    }
    if (refuseWrite(req, res, deps.token, deps)) return;
    if (path === '/-/reload') {
      if (req.method !== 'POST') return sendJson(res, 405, { error: 'use POST' });
      req.resume();
      if (!isJsonContentType(req.headers['content-type']))
        return sendJson(res, 415, { error: 'admin writes need Content-Type: application/json' });
      if (!deps.reload) return sendJson(res, 404, { error: 'reload not available' });
      // 200 when the new file is applied; 400 with the problems when it is refused (the running
      // configuration stays either way).
      deps.reload().then(
        (r) => sendJson(res, r.ok ? 200 : 400, r.ok ? { reloaded: true } : { reloaded: false, problems: r.problems }),
        () => sendJson(res, 500, { reloaded: false, problems: ['reload failed'] }),
      );
      return;
    }
    if (isCordonPath(path)) return cordonRoute(req, res, path, deps.fleet, deps.cordons);
    if (isIncidentPath(path)) return incidentRoute(req, res, path, deps.incidents);
    if (isMaintenancePath(path)) return maintenanceRoute(req, res, path, deps.maintenance);
    if (req.method !== 'GET') return sendJson(res, 405, { error: 'use GET' });
    switch (path) {
      case '/health':
        return sendJson(res, 200, { status: 'ok' });
      case '/ready': {
        const { status, body } = readyAnswer(deps, req.url ?? '/');
        return sendJson(res, status, body);
      }
      case '/status':
        return sendJson(res, 200, statusOf(deps));
      case '/metrics':
        deps.fleet.collect();
        deps.collect?.();
        deps.metrics.setReady(isReady(deps));
        deps.metrics.registry
          .metrics()
          .then((text) => {
            res.writeHead(200, { 'content-type': deps.metrics.registry.contentType });
            res.end(text);
          })
          .catch(() => sendJson(res, 500, { error: 'metrics unavailable' }));
        return;
      default:
        return sendJson(res, 404, {
          error: 'not found',
          paths: PATHS,
        });
    }
  });
}
