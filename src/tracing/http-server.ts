/**
 * The SERVER span of an HTTP request, as OpenTelemetry's HTTP server span conventions (stable)
 * describe it: the required `http.request.method`, `url.path`, `url.scheme`; the conditionally
 * required `http.response.status_code`, `http.route`, `url.query`, `server.port` and `error.type`;
 * the recommended `server.address`, `network.protocol.version` and `user_agent.original`. Read only
 * when the trace is exported, from the request as it came. Nothing secret: a path's segments after
 * the first are REDACTED (`/key/<api key>` becomes `/key/REDACTED`), a query keeps its names and not
 * its values. The recommended `client.address` and `network.peer.*` are left out: SPEC 13 keeps
 * addresses out of spans, and a client's IP is in its request log line, found by `trace_id`.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Attributes } from '@opentelemetry/api';

/** What the SERVER span reads of a request (node:http's IncomingMessage and the plain lane's alike). */
export interface HttpServerRequest {
  readonly req: {
    readonly method?: string;
    readonly url?: string;
    readonly headers: IncomingHttpHeaders;
    readonly httpVersionMajor: number;
    readonly httpVersionMinor: number;
  };
  /** The matched route (`/`, `/key/{key}`); undefined for a path nothing is served at. */
  readonly route: string | undefined;
}

/** RFC 9110's methods and PATCH: anything else is `_OTHER`, its name in http.request.method_original. */
const KNOWN_METHODS = new Set(['CONNECT', 'DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT', 'TRACE']);
/** Bounds on what a client writes into a span: a path's first segment, the Host, the user agent. */
const MAX_SEGMENT_CHARS = 64;
const MAX_HOST_CHARS = 255;
const MAX_UA_CHARS = 200;
const MAX_QUERY_NAMES = 16;

/** Writes the request's attributes into `into`; answers the span's name (`{method} {route}`). */
export function httpServerAttributes(r: HttpServerRequest, status: number, into: Attributes): string {
  const req = r.req;
  const sent = req.method ?? 'GET';
  const method = KNOWN_METHODS.has(sent) ? sent : '_OTHER';
  into['http.request.method'] = method;
  if (method !== sent) into['http.request.method_original'] = sent.slice(0, MAX_SEGMENT_CHARS);
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  into['url.path'] = scrubbedPath(q < 0 ? url : url.slice(0, q));
  if (q >= 0) into['url.query'] = scrubbedQuery(url.slice(q + 1));
  // TLS ends before Switchyard (it serves plain HTTP): the scheme of the request it received.
  into['url.scheme'] = 'http';
  if (r.route !== undefined) into['http.route'] = r.route;
  into['network.protocol.version'] = `${req.httpVersionMajor}.${req.httpVersionMinor}`;
  const host = hostOf(req.headers.host);
  if (host !== null) {
    into['server.address'] = host.address;
    into['server.port'] = host.port;
  }
  const ua = req.headers['user-agent'];
  if (ua !== undefined) into['user_agent.original'] = ua.slice(0, MAX_UA_CHARS);
  into['http.response.status_code'] = status;
  // A server's 4xx is the client's error, not the span's (the conventions' status rule).
  if (status >= 500) into['error.type'] = String(status);
  return r.route === undefined ? method : `${method} ${r.route}`;
}

/** The first segment as it came (bounded), each later one REDACTED: keys and tokens ride in paths. */
function scrubbedPath(path: string): string {
  const parts = path.split('/');
  // parts[0] is the empty text before the leading slash.
  if (parts.length <= 2) return `/${(parts[1] ?? '').slice(0, MAX_SEGMENT_CHARS)}`;
  return `/${parts[1]!.slice(0, MAX_SEGMENT_CHARS)}/${parts
    .slice(2)
    .map((p) => (p === '' ? '' : 'REDACTED'))
    .join('/')}`;
}

/** The query's names, each value REDACTED (the conventions' word for a value held back). */
function scrubbedQuery(query: string): string {
  return query
    .split('&')
    .slice(0, MAX_QUERY_NAMES)
    .map((kv) => {
      const eq = kv.indexOf('=');
      const name = (eq < 0 ? kv : kv.slice(0, eq)).slice(0, MAX_SEGMENT_CHARS);
      return eq < 0 ? name : `${name}=REDACTED`;
    })
    .join('&');
}

/** The Host header's host and port (80, HTTP's, when it names none); null when absent or unreadable. */
function hostOf(header: string | undefined): { address: string; port: number } | null {
  if (header === undefined || header === '' || header.length > MAX_HOST_CHARS) return null;
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(header);
  if (m === null) return null;
  const address = m[1]!.startsWith('[') ? m[1]!.slice(1, -1) : m[1]!;
  const port = m[2] === undefined ? 80 : Number(m[2]);
  return port <= 65535 ? { address, port } : null;
}
